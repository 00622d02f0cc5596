#!/usr/bin/env bash
# A venv for verl's adapter tests, on top of an agentgym install (verl 0.9.1 caps transformers < 5.11, below the
# train extra's): DIR gets its own verl, transformers and what they pin; everything else (torch included) is the
# base's, seen through a .pth placed after the venv's own site-packages, so the venv's pins win.
#
#   scripts/verl_venv.sh DIR                  from the locks: requirements/lock.txt and requirements/lock-verl.txt
#   AGENTGYM_UNLOCKED=1 scripts/verl_venv.sh DIR   the newest versions pyproject.toml admits (scripts/lock.sh)
#   PYTHON=/path/to/python scripts/verl_venv.sh DIR   on top of another base than the active `python`
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
(($# == 1)) || { echo "usage: scripts/verl_venv.sh DIR" >&2; exit 2; }
dir=$1
base=${PYTHON:-$(command -v python || command -v python3)}
"$base" -m venv "$dir"
base_site=$("$base" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
own_site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "import site; site.addsitedir('$base_site')" >"$own_site/agentgym-base.pth"
lock=()
if [[ "${AGENTGYM_UNLOCKED:-0}" != 1 ]]; then
    # what pip put in the venv's own site-packages when the lock was made (the base's packages are the base lock's)
    lock=(-c requirements/lock-verl.txt)
fi
"$dir/bin/python" -m pip install -q "${lock[@]}" -e '.[verl]' torch==2.13.0  # torch is the base's: pip leaves it
