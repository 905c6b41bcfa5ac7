"""The containerd a run starts to serve the CRI (Kubernetes' path to a runtime), with every
handler this host can run: its own root (on disk, in the run's data directory), state
and socket (in the run's state directory), CNI configuration and sandbox image, so that
nothing of it touches a containerd the host runs, and `virtbench clean` finds all of it
by the run's directories and label after a crash.

Handlers as a node configures them: `runc`, `crun` and `youki` through the runc v2 shim
(its `BinaryName`), `runsc` through gVisor's own shim (`containerd-shim-runsc-v1`,
ptrace platform and host networking inside the pod's network namespace, as the docker
driver runs runsc, with the ready probe's unix socket allowed through). Pods' cgroups
under the instance's (cgroupfs driver); their network namespaces under the state
directory; the OOM score of a pod never set below containerd's own (a host that runs
virtbench inside a container may not lower it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from virtbench.runtimes.base import which

RUNC_SHIM = "io.containerd.runc.v2"
RUNSC_SHIM = "io.containerd.runsc.v1"
RUNSC_SHIM_BINARY = "containerd-shim-runsc-v1"
RUNC_SHIM_BINARY = "containerd-shim-runc-v2"
# the OCI runtimes the runc v2 shim drives, by handler name
SHIMMED = {"runc": "runc", "crun": "crun", "youki": "youki"}
HANDLERS = (*SHIMMED, "runsc")
NAMESPACE = "k8s.io"  # the CRI's containerd namespace
CNI_BIN = Path("/usr/lib/cni")


def handler_problem(handler: str) -> tuple[str, str, bool] | None:
    """(why, fix, whether the host's own settings are why) where this host cannot run
    `handler`'s pods; None where it can."""
    if handler in SHIMMED:
        if which(RUNC_SHIM_BINARY) is None:
            return f"{RUNC_SHIM_BINARY} not on PATH", "apt-get install containerd", False
        if which(SHIMMED[handler]) is None:
            fix = "make youki" if handler == "youki" else f"apt-get install {handler}"
            return f"{SHIMMED[handler]} not on PATH", fix, False
        return None
    if handler == "runsc":
        if which("runsc") is None:
            return "runsc not on PATH", "apt-get install runsc", False
        if which(RUNSC_SHIM_BINARY) is None:
            return f"{RUNSC_SHIM_BINARY} (gVisor's containerd shim) not on PATH", "make cri", False
        if not has_capability(CAP_SYS_RESOURCE):
            return (
                f"{RUNSC_SHIM_BINARY} protects itself from the OOM killer (oom_score_adj "
                "-999), which needs CAP_SYS_RESOURCE, and this root lacks it (a container's "
                "root?)",
                "run virtbench as a root that has CAP_SYS_RESOURCE",
                True,
            )
        return None
    known = ", ".join(HANDLERS)
    return f"no handler {handler!r} in the containerd virtbench starts", known, False


CAP_SYS_RESOURCE = 24


def has_capability(bit: int, status: Path = Path("/proc/self/status")) -> bool:
    """Whether this process holds capability `bit` (its effective set)."""
    try:
        line = next(x for x in status.read_text().splitlines() if x.startswith("CapEff:"))
    except (OSError, StopIteration):
        return False
    return bool(int(line.split()[1], 16) >> bit & 1)


@dataclass(frozen=True)
class Layout:
    """Where a run's containerd keeps things."""

    root: Path  # images and snapshots, on disk
    state: Path  # sockets, tasks' mounts, network namespaces (the run's state directory)
    cni: Path  # its CNI configuration directory and address leases

    @property
    def socket(self) -> Path:
        return self.state / "containerd.sock"

    @property
    def config(self) -> Path:
        return self.state / "containerd.toml"


def _handler_toml(handler: str, runsc_config: Path) -> str:
    key = f'[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.{handler}]'
    if handler == "runsc":
        return (
            f'{key}\n  runtime_type = "{RUNSC_SHIM}"\n'
            f"{key[:-1]}.options]\n"
            '  TypeUrl = "io.containerd.runsc.v1.options"\n'
            f'  ConfigPath = "{runsc_config}"\n'
        )
    return (
        f'{key}\n  runtime_type = "{RUNC_SHIM}"\n'
        f"{key[:-1]}.options]\n"
        f'  BinaryName = "{which(SHIMMED[handler]) or SHIMMED[handler]}"\n'
        "  SystemdCgroup = false\n"
    )


def config_toml(where: Layout, handlers: list[str], sandbox_image: str) -> str:
    """containerd's configuration (version 2) for a run: its own places, the CRI plugin
    with `handlers` (the first the default), no registry ever asked."""
    cri = '[plugins."io.containerd.grpc.v1.cri"]'
    runsc_config = where.state / "runsc.toml"
    parts = [
        "version = 2",
        f'root = "{where.root}"',
        f'state = "{where.state / "containerd"}"',
        f'[grpc]\n  address = "{where.socket}"',
        f'[ttrpc]\n  address = "{where.socket}.ttrpc"',
        '[debug]\n  address = ""',
        '[metrics]\n  address = ""',
        f"{cri}\n"
        f'  sandbox_image = "{sandbox_image}"\n'
        '  stream_server_address = "127.0.0.1"\n'
        '  stream_server_port = "0"\n'
        "  disable_apparmor = true\n"
        "  netns_mounts_under_state_dir = true\n"
        "  restrict_oom_score_adj = true\n"
        "  tolerate_missing_hugetlb_controller = true",
        f'{cri[:-1]}.containerd]\n  default_runtime_name = "{handlers[0]}"\n'
        '  snapshotter = "overlayfs"',
        *(_handler_toml(h, runsc_config) for h in handlers),
        f'{cri[:-1]}.cni]\n  bin_dir = "{CNI_BIN}"\n  conf_dir = "{where.cni}"\n  max_conf_num = 1',
    ]
    return "\n".join(parts) + "\n"


# runsc inside a pod, as the docker driver runs it: ptrace (works on more hosts than kvm),
# host networking inside the pod's network namespace (its own netstack fails on some
# kernels), the ready probe's bind-mounted unix socket allowed
RUNSC_TOML = '[runsc_config]\n  platform = "ptrace"\n  network = "host"\n  host-uds = "open"\n'


def cni_conflist(name: str, bridge: str, subnet: str, leases: Path) -> str:
    """The pods' network: a bridge of the run's (`bridge`, no masquerade, nothing
    forwarded off the host) with addresses from `subnet`, leases kept in `leases`."""
    conf = {
        "cniVersion": "0.4.0",
        "name": name,
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge,
                "isGateway": True,
                "ipMasq": False,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": subnet}]],
                    "dataDir": str(leases),
                },
            },
            {"type": "loopback"},
        ],
    }
    return json.dumps(conf, indent=1)
