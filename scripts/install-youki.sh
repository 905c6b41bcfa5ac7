#!/usr/bin/env bash
# Build youki (the OCI runtime in Rust) from its crate into /usr/local/bin, once: Debian 12
# does not ship it. About 4 minutes on 2 vCPUs (4 min 7 s measured on the project's test
# machine beside other work), once: the binary is kept by version in the cache below.
# Needs cargo >= 1.80: the one on PATH if recent enough, else Debian 12's cargo-web (1.96). No version of the crate has default features: v1 is what runs on a
# cgroup v1 (hybrid) host, v2 on a unified one, seccomp applies the bundles' filters.
# Usage: scripts/install-youki.sh   (as root; `make youki`, and part of `make test`)
set -euo pipefail
VERSION=0.7.0
FEATURES=v1,v2,seccomp,systemd

# a build is kept by its version, features and machine: a new checkout, a venv made
# again or a lost /usr/local/bin installs it in a second
CACHE=${VIRTBENCH_CACHE_DIR:-/var/cache/virtbench}/youki
KEPT=$CACHE/youki-$VERSION-${FEATURES//,/-}-$(uname -m)

have=$(youki --version 2>/dev/null || true)  # "youki version: 0.7.0" first
case "$have" in
  "youki version: $VERSION"*) exit 0 ;;
esac
if [ "$(id -u)" -ne 0 ]; then
  echo "install-youki: must run as root (apt-get install, /usr/local/bin)" >&2
  exit 1
fi
kept=$("$KEPT" --version 2>/dev/null || true)
if [ "${kept%%$'\n'*}" = "youki version: $VERSION" ]; then
  install -m 0755 "$KEPT" /usr/local/bin/youki
  echo "install-youki: youki $VERSION from $KEPT"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
missing=()
for p in libseccomp-dev pkg-config gcc; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
recent() {  # is cargo $1 at least 1.80?
  "$1" --version 2>/dev/null | awk '{split($2, v, "."); exit !(v[1] > 1 || v[2] >= 80)}'
}
CARGO=$(command -v cargo || true)
if [ -z "$CARGO" ] || ! recent "$CARGO"; then
  missing+=(cargo-web rustc-web)
  CARGO=/usr/bin/cargo
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-youki: installing ${missing[*]}"
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "install-youki: cargo install youki@$VERSION (about 4 minutes)"
"$CARGO" install "youki@$VERSION" --locked --force --root /usr/local --features "$FEATURES"
youki --version
mkdir -p "$CACHE" && install -m 0755 /usr/local/bin/youki "$KEPT.tmp" && mv "$KEPT.tmp" "$KEPT"
