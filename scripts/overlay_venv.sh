#!/usr/bin/env bash
# A venv for one extra that cannot share the main install, layered on top of it: DIR gets the extra's packages and
# what they pin; everything else (torch included) is the base's, seen through a .pth placed after the venv's own
# site-packages, so the venv's pins win.
#   verl: verl 0.9.1 caps transformers < 5.11, below the train extra's
#   ors:  OpenReward's SDK pins sse-starlette 2.3.6, and the mcp extra needs >= 3
#   verifiers: verifiers 0.4.0 pins mcp 2.0.0 and openai < 3 (the mcp extra has mcp 2.3.0, openai-agents openai 3)
#
#   scripts/overlay_venv.sh EXTRA DIR             from the locks: requirements/lock.txt and requirements/lock-EXTRA.txt
#   AGENTGYM_UNLOCKED=1 scripts/overlay_venv.sh EXTRA DIR   the newest versions pyproject.toml admits (scripts/lock.sh)
#   PYTHON=/path/to/python scripts/overlay_venv.sh EXTRA DIR   on top of another base than the active `python`
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
(($# == 2)) || { echo "usage: scripts/overlay_venv.sh verl|ors|verifiers DIR" >&2; exit 2; }
extra=$1 dir=$2
[[ $extra == verl || $extra == ors || $extra == verifiers ]] ||
    { echo "overlay_venv.sh: no overlay extra '$extra' (verl, ors or verifiers)" >&2; exit 2; }
base=${PYTHON:-$(command -v python || command -v python3)}
"$base" -m venv "$dir"
base_site=$("$base" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
own_site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "import site; site.addsitedir('$base_site')" >"$own_site/agentgym-base.pth"
lock=()
if [[ "${AGENTGYM_UNLOCKED:-0}" != 1 ]]; then
    # what pip put in the venv's own site-packages when the lock was made (the base's packages are the base lock's)
    lock=(-c "requirements/lock-$extra.txt")
fi
"$dir/bin/python" -m pip install -q "${lock[@]}" -e ".[$extra]" torch==2.13.0  # torch is the base's: pip leaves it
