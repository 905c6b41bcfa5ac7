#!/usr/bin/env bash
# Install the Debian packages virtbench needs, once (idempotent, quiet when done).
# Usage: scripts/install-deps.sh [test]   (as root, on Debian 12 or 13)
set -euo pipefail

# What a release calls a package: Debian 12 (bookworm) ships clang 14 and PostgreSQL 15
# under versioned names, Debian 13 (trixie) the distribution's own clang and PostgreSQL,
# and Docker's client apart from its daemon (docker-cli).
. /etc/os-release
case "${VERSION_CODENAME:-}" in
  bookworm)
    CLANG=(clang-14 lld-14 libclang-rt-14-dev-wasm32)
    POSTGRES=(postgresql-15 postgresql-client-15)
    DOCKER=(docker.io) ;;
  *)
    CLANG=(clang lld libclang-rt-dev-wasm32)
    POSTGRES=(postgresql postgresql-client)
    DOCKER=(docker.io docker-cli) ;;
esac

PACKAGES=(
  # build the static guest programs, and their WASI builds (wasmtime's)
  make gcc musl-tools "${CLANG[@]}" wasi-libc
  # Python environment
  python3 python3-venv
  # runtimes
  runc crun runsc
  # checkpoint/restore of runc, crun, podman and lxc containers (where `criu check` passes)
  criu
  "${DOCKER[@]}" containerd iptables
  podman conmon containernetworking-plugins golang-github-containers-common
  # (LXC confines containers with its AppArmor profile where the kernel has AppArmor on:
  # the apparmor package loads it, and a minimal image lacks it)
  lxc lxd systemd-container apparmor
  # namespace sandboxes
  bubblewrap
  # host tools: networks, processes, mounts, timing by hand
  iproute2 procps util-linux hyperfine e2fsprogs
  # servers copied into the artifacts (the same binaries everywhere), and their clients
  nginx redis-server wrk redis-tools sysbench libsqlite3-dev iperf3 memcached
  "${POSTGRES[@]}" mariadb-server-core
  fio httperf iputils-ping
  # the task workload's agent step: Debian's Python and git, copied into the artifact
  git
  # VM-class runtimes (the minimal guest boots under KVM or TCG)
  qemu-system-x86
  # images built elsewhere: each instance's copy-on-write layer of a disk (qemu-img, qemu-io),
  # and the DHCP server of the run's bridge for images that take their address only so
  qemu-utils dnsmasq-base
  # Linux guests: the cloud kernel is fetched with apt-get download; cpio checks the initramfs
  cpio
  # fleet mode: Ansible reaches hosts over ssh
  openssh-client
)
# `install-deps.sh test` (make test) also installs what only the tests need: a headless
# browser the HTML report's test opens it in, sshd for the fleet tests' hosts (network
# namespaces), and debootstrap for the guest hosts the suite boots (tests/hosts). Not for
# `make demo`: about 700 MiB it does not use, and on a host whose init starts services,
# an SSH server nobody asked for.
if [ "${1:-}" = "test" ]; then
  PACKAGES+=(chromium chromium-driver fonts-dejavu-core openssh-server debootstrap)
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: must run as root (apt-get install)" >&2
  exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# virtbench runs its own postgres in each instance: no system cluster (and its daemon)
if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
  mkdir -p /etc/postgresql-common/createcluster.d
  printf 'create_main_cluster = false\n' > /etc/postgresql-common/createcluster.d/virtbench.conf
fi
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
