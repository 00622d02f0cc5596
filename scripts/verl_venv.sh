#!/usr/bin/env bash
# The verl venv (verl 0.9.1 caps transformers < 5.11): scripts/overlay_venv.sh verl DIR, which says how.
set -euo pipefail
(($# == 1)) || { echo "usage: scripts/verl_venv.sh DIR" >&2; exit 2; }
exec "$(dirname "$0")/overlay_venv.sh" verl "$1"
