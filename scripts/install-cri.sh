#!/usr/bin/env bash
# Build crictl (cri-tools, the CRI's own client) and gVisor's containerd shim
# (containerd-shim-runsc-v1) from their Go modules into /usr/local/bin, once: Debian ships
# neither, and the `cri` runtimes drive pods through them. They need Go 1.26; where the go
# on PATH is older (Debian 12 has 1.19, Debian 13 1.24) or missing, the Go toolchain comes
# the way the go command itself fetches one: the module golang.org/toolchain from the Go
# module proxy, unpacked under /var/cache/virtbench/go. containerd and the CNI plugins
# are Debian packages (scripts/install-deps.sh).
# Usage: scripts/install-cri.sh   (as root; `make cri`, and part of `make test`)
set -euo pipefail
CRICTL=v1.37.0
# gVisor publishes its Go module on the branch "go" without tags: a pseudo-version
GVISOR=v0.0.0-20260905035102-160fafc42237
GO=1.26.8
PROXY=https://proxy.golang.org
CACHE=/var/cache/virtbench/go
STAMP=/usr/local/share/virtbench/cri.versions
WANT="crictl $CRICTL gvisor-shim $GVISOR"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] &&
  command -v crictl >/dev/null && command -v containerd-shim-runsc-v1 >/dev/null; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-cri: must run as root (/usr/local/bin)" >&2
  exit 1
fi

recent() {  # is the go at $1 at least 1.26?
  "$1" version 2>/dev/null | awk '{sub(/^go/, "", $3); split($3, v, "."); exit !(v[1] > 1 || v[2] >= 26)}'
}
GOBIN_TOOL=$(command -v go || true)
if [ -z "$GOBIN_TOOL" ] || ! recent "$GOBIN_TOOL"; then
  GOBIN_TOOL=$CACHE/go$GO/bin/go
  if ! recent "$GOBIN_TOOL"; then
    echo "install-cri: Go $GO from the Go module proxy (golang.org/toolchain)"
    mkdir -p "$CACHE"
    zip="$CACHE/go$GO.zip"
    rm -rf "$CACHE/unpack" && mkdir -p "$CACHE/unpack"
    # python3, not curl or unzip: a stock Debian host may have neither
    python3 - "$PROXY/golang.org/toolchain/@v/v0.0.1-go$GO.linux-amd64.zip" "$zip" \
      "$CACHE/unpack" <<'PY'
import shutil, sys, urllib.request, zipfile
url, zip_path, into = sys.argv[1:]
with urllib.request.urlopen(url, timeout=300) as r, open(zip_path, "wb") as out:
    shutil.copyfileobj(r, out)
zipfile.ZipFile(zip_path).extractall(into)
PY
    rm -rf "$CACHE/go$GO"
    mv "$CACHE/unpack/golang.org/toolchain@v0.0.1-go$GO.linux-amd64" "$CACHE/go$GO"
    chmod -R a+rX "$CACHE/go$GO" && chmod a+x "$CACHE/go$GO"/bin/* "$CACHE/go$GO"/pkg/tool/*/*
    rm -rf "$CACHE/unpack" "$zip"
  fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOPATH=$work/gopath GOCACHE=$work/cache GOBIN=/usr/local/bin GOTOOLCHAIN=local
export GOFLAGS=-modcacherw CGO_ENABLED=0
echo "install-cri: go install crictl@$CRICTL and gVisor's shim (minutes)"
"$GOBIN_TOOL" install -ldflags "-X sigs.k8s.io/cri-tools/pkg/version.Version=${CRICTL#v}" \
  "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL"
"$GOBIN_TOOL" install "gvisor.dev/gvisor/shim@$GVISOR"
mv /usr/local/bin/shim /usr/local/bin/containerd-shim-runsc-v1
mkdir -p "$(dirname "$STAMP")"
echo "$WANT" >"$STAMP"
/usr/local/bin/crictl --version
