#!/usr/bin/env bash
# Refresh the locks that ./install.sh and .ci/run install from: resolve the newest versions pyproject.toml admits
# in fresh venvs (./install.sh and scripts/overlay_venv.sh with AGENTGYM_UNLOCKED=1), then freeze them:
#   requirements/lock.txt       every package of `./install.sh` (the all extra, torch, the default model)
#   requirements/lock-verl.txt  what the verl venv installs into its own site-packages on top of that
#   requirements/lock-ors.txt   what the ORS venv (OpenReward's SDK) installs into its own, on top of the same
#   requirements/lock-verifiers.txt   what the verifiers venv (PrimeIntellect's verifiers) installs into its own, likewise
#   requirements/lock-harbor.txt  Harbor's own venv (Python >= 3.12, no agentgym in it: scripts/harbor_venv.sh)
# Run it from a clone (about 10 minutes, the Debian packages of ./install.sh already there), then run the tests
# (python -m pytest -q, and .ci/run's overlay steps) and commit the five files together with what made them pass.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
base_python=${PYTHON:-$(command -v python3 || command -v python)}
work=$(mktemp -d /tmp/agentgym-lock.XXXXXX)
trap 'rm -rf "$work"' EXIT

"$base_python" -m venv "$work/base"
AGENTGYM_UNLOCKED=1 AGENTGYM_SKIP_APT=1 PYTHON="$work/base/bin/python" ./install.sh
for extra in verl ors verifiers; do
    AGENTGYM_UNLOCKED=1 PYTHON="$work/base/bin/python" scripts/overlay_venv.sh "$extra" "$work/$extra"
done
AGENTGYM_UNLOCKED=1 AGENTGYM_SKIP_COMPOSE=1 scripts/harbor_venv.sh "$work/harbor"

header() {
    echo "# $1"
    echo "# Written by scripts/lock.sh on $(date -u +%Y-%m-%d) with $("$work/base/bin/python" -V) on $(uname -sm);"
    echo "# tests/test_lock.py checks it against pyproject.toml. Install without it: see the README (AGENTGYM_UNLOCKED=1)."
}
{
    header "The exact versions ./install.sh installs (pip install -c requirements/lock.txt)."
    "$work/base/bin/python" -m pip freeze --exclude-editable | LC_ALL=C sort -f
} >requirements/lock.txt
for extra in verl ors verifiers; do
    own_site=$("$work/$extra/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    {
        header "What scripts/overlay_venv.sh $extra installs into that venv's own site-packages, on top of requirements/lock.txt."
        "$work/$extra/bin/python" -m pip freeze --exclude-editable --path "$own_site" | LC_ALL=C sort -f
    } >"requirements/lock-$extra.txt"
done
{
    echo "# What scripts/harbor_venv.sh installs into Harbor's own venv (Python >= 3.12; agentgym is not in it)."
    echo "# Written by scripts/lock.sh on $(date -u +%Y-%m-%d) with $("$work/harbor/bin/python" -V) on $(uname -sm)."
    "$work/harbor/bin/python" -m pip freeze --all | grep -Ev '^(pip|setuptools|wheel)==' | LC_ALL=C sort -f
} >requirements/lock-harbor.txt
echo "== wrote requirements/lock.txt ($(grep -vc '^#' requirements/lock.txt) packages), requirements/lock-verl.txt" \
     "($(grep -vc '^#' requirements/lock-verl.txt)), requirements/lock-ors.txt ($(grep -vc '^#' requirements/lock-ors.txt))" \
     "requirements/lock-verifiers.txt ($(grep -vc '^#' requirements/lock-verifiers.txt)) and requirements/lock-harbor.txt" \
     "($(grep -vc '^#' requirements/lock-harbor.txt))"
