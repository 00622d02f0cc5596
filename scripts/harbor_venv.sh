#!/usr/bin/env bash
# Harbor (the task format `agentgym export harbor` writes) in a venv of its own, and Docker Compose v2, which
# Harbor's docker environment runs every task through.
#   harbor 0.26 needs Python >= 3.12 (this project runs on 3.10+): the venv is made from a python3.12/3.13 found on
#   PATH or under pyenv (PYTHON=/path/to/python3.12 picks one); agentgym itself is not installed in it.
#   Debian bookworm's docker.io has no `docker compose`, and its docker-compose package is v1: Debian trixie's
#   docker-compose 2.26.1 (a Go program that needs only libc >= 2.34) is installed from Debian's archive, checked
#   against its SHA-256, where `docker compose version` fails (root, or sudo).
#
#   scripts/harbor_venv.sh DIR                        harbor at the versions of requirements/lock-harbor.txt
#   AGENTGYM_UNLOCKED=1 scripts/harbor_venv.sh DIR    the newest harbor 0.26.x (scripts/lock.sh writes the lock)
#   AGENTGYM_SKIP_COMPOSE=1 scripts/harbor_venv.sh DIR  the venv only
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore DEBIAN_FRONTEND=noninteractive
(($# == 1)) || { echo "usage: scripts/harbor_venv.sh DIR" >&2; exit 2; }
dir=$1
HARBOR=harbor==0.26.0
COMPOSE_DEB=http://deb.debian.org/debian/pool/main/d/docker-compose/docker-compose_2.26.1-4_amd64.deb
COMPOSE_SHA256=47681197cb2b1ab88206b42a1a92fc75f50d9530a6322d03494a473eed0408ea

die() { echo "harbor_venv.sh: error: $*" >&2; exit 1; }

runs_312() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }

find_python() {
    local candidate root
    if [[ -n "${PYTHON:-}" ]]; then echo "$PYTHON"; return; fi
    # a pyenv shim on PATH may name a version that is not the selected one: each candidate is run
    root=$( (command -v pyenv >/dev/null && pyenv root) || echo "$HOME/.pyenv")
    for candidate in python3.12 python3.13 "$root"/versions/3.12*/bin/python "$root"/versions/3.13*/bin/python; do
        runs_312 "$candidate" && { command -v "$candidate"; return; }
    done
    die "harbor needs Python >= 3.12 and none was found (python3.12 on PATH, pyenv, or PYTHON=/path/to/python3.12)"
}

py=$(find_python)
runs_312 "$py" || die "$py is not a Python >= 3.12"
echo "== harbor: a venv in $dir from $("$py" --version)"
"$py" -m venv "$dir"
lock=()
[[ "${AGENTGYM_UNLOCKED:-0}" == 1 ]] || lock=(-c requirements/lock-harbor.txt)
"$dir/bin/python" -m pip install -q "${lock[@]}" "$HARBOR"
"$dir/bin/harbor" --version

if [[ "${AGENTGYM_SKIP_COMPOSE:-0}" != 1 ]] && ! docker compose version >/dev/null 2>&1; then
    echo "== Docker Compose v2: Debian's docker-compose 2.26.1 (trixie)"
    sudo=()
    ((EUID == 0)) || sudo=(sudo)
    deb=$(mktemp --suffix=.deb)
    curl -fsSL -o "$deb" "$COMPOSE_DEB"
    echo "$COMPOSE_SHA256  $deb" | sha256sum -c --quiet - || die "$COMPOSE_DEB does not have the expected SHA-256"
    "${sudo[@]}" dpkg -i "$deb" >/dev/null
    rm -f "$deb"
    docker compose version
fi
