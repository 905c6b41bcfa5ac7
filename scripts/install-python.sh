#!/usr/bin/env bash
# The Python environment from requirements.lock: pip puts uv (pinned there) in the venv,
# unless that uv is there already, then uv installs the pinned packages and virtbench
# itself (editable): the same wheels as pip's, in a tenth of its time. Where pip is told
# to stay offline (PIP_NO_INDEX, PIP_FIND_LINKS: a fleet host, a guest host), so is uv.
# Usage: scripts/install-python.sh VENV   (from the checkout, as make's venv step runs it)
set -euo pipefail
venv=$1
pin=$(grep '^uv==' requirements.lock)
case "$("$venv/bin/uv" --version 2>/dev/null || true)" in
  "uv ${pin#uv==} "*) ;;
  *) "$venv/bin/python" -m pip install -q --disable-pip-version-check "$pin" ;;
esac
offline=()
case "${PIP_NO_INDEX:-}" in
  "" | 0 | false | no | off) ;;
  *) offline+=(--no-index) ;;
esac
if [ -n "${PIP_FIND_LINKS:-}" ]; then
  offline+=(--find-links "$PIP_FIND_LINKS")
fi
uv=("$venv/bin/uv" pip install -q --python "$venv/bin/python" "${offline[@]}")
"${uv[@]}" -r requirements.lock
"${uv[@]}" --no-deps --no-build-isolation -e .
