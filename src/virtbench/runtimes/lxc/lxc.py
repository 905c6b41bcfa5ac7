"""`lxc`: LXC containers on the artifact rootfs, with a config file virtbench writes.

Each instance gets `<state>/lxc/<name>/config` (no template, no download): the shared
rootfs mounted read-only, /dev from autodev, and `lxc.init.cmd` = the workload, so the
container's PID 1 is the workload itself. Detached instances start with `lxc-start -d`
(an `[lxc monitor]` process stays with each); foreground ones with `lxc-start -F`, which
returns when the init exits. `lxc.cgroup.dir.*` puts the cgroups at `virtbench/<name>`
(payload) and `virtbench/<name>-m` (monitor); LXC creates and removes both as it would
by hand, and the monitor is counted with the instance. Networks: `none` (`type =
empty`), `host` (`type = none` shares the host's), `bridge` (the virtbench bridge's
per-instance netns, shared with `lxc.namespace.share.net`). This host has no lxcbr0.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from virtbench.errors import InstanceError
from virtbench.host import cgroups, proc
from virtbench.host.facts import lsm
from virtbench.runtimes import launcher
from virtbench.runtimes.base import Availability, Family, Instance, Runtime, remove_tree, which
from virtbench.runtimes.controls import CommandExec, Pause, Undriven

START_TIMEOUT = 60.0
MONITOR_SUFFIX = "-m"


def init_cmd(argv: tuple[str, ...] | list[str]) -> str:
    """`lxc.init.cmd`'s value. liblxc splits it on spaces and knows no quoting, so an
    argument with blanks cannot be passed: say so instead of running something else."""
    for arg in argv:
        if not arg or any(c.isspace() for c in arg):
            raise InstanceError(f"lxc.init.cmd cannot carry the argument {arg!r} (blank)")
    return " ".join(argv)


def instance_lines(inst: Instance, parent: str = cgroups.PARENT) -> list[str]:
    """The liblxc lines lxc's config and LXD's raw.lxc share: the workload as init, its
    label, a tmpfs /tmp, both cgroups named after the instance -- LXC makes and removes
    them itself, as it would by hand, and the monitor's is counted and cleaned with the
    payload's -- and the instance's bind mounts."""
    return [
        "lxc.init.cmd = " + init_cmd(inst.argv),
        f"lxc.environment = VIRTBENCH_INSTANCE={inst.name}",
        "lxc.mount.entry = tmpfs tmp tmpfs nosuid,nodev,create=dir 0 0",
        f"lxc.cgroup.dir.container = {parent}/{inst.name}",
        f"lxc.cgroup.dir.monitor = {parent}/{inst.name}{MONITOR_SUFFIX}",
        *(
            f"lxc.mount.entry = {host} {dest.lstrip('/')} none bind,create=dir 0 0"
            for host, dest in inst.binds
        ),
    ]


def lxc_config(
    inst: Instance, network: str, cgroup_version: int, parent: str = cgroups.PARENT
) -> str:
    """The container's config file (pure, for tests), its cgroups under `parent`."""
    spec = inst.spec
    lines = [
        f"lxc.uts.name = {spec.name}",
        f"lxc.rootfs.path = dir:{spec.rootfs}",
        "lxc.rootfs.options = ro",
        "lxc.autodev = 1",
        "lxc.mount.auto = proc:mixed sys:ro",
        "lxc.tty.max = 0",
        "lxc.pty.max = 0",
        "lxc.console.path = none",
        *instance_lines(inst, parent),
    ]
    if network == "none":
        lines.append("lxc.net.0.type = empty")
    elif network == "host":
        lines.append("lxc.net.0.type = none")
    else:
        assert inst.netns is not None
        lines.append(f"lxc.namespace.share.net = {inst.netns}")
    key = "lxc.cgroup" if cgroup_version == 1 else "lxc.cgroup2"
    if spec.memory_mib:
        name = "memory.limit_in_bytes" if cgroup_version == 1 else "memory.max"
        lines.append(f"{key}.{name} = {spec.memory_mib * 1024 * 1024}")
    if spec.cpus:
        lines.append(f"{key}.cpuset.cpus = {spec.cpus}")
    if spec.pids_limit:
        lines.append(f"{key}.pids.max = {spec.pids_limit}")
    return "\n".join(lines) + "\n"


# LXC confines a container with its own AppArmor profile where the kernel has AppArmor on
# (as Docker applies docker-default): the profile must be loaded, which the apparmor
# package does at boot (a minimal image lacks it: every start then fails in sync_wait)
LXC_PROFILE = "lxc-container-default-cgns"
APPARMOR_PROFILES = Path("/sys/kernel/security/apparmor/profiles")
APPARMOR_FIX = "apt-get install apparmor; apparmor_parser -r -W /etc/apparmor.d/lxc-containers"


def apparmor_unready(profiles: Path = APPARMOR_PROFILES) -> str | None:
    """Why LXC cannot confine a container here (None: AppArmor is off, or its profile is
    loaded)."""
    if lsm() != "apparmor":
        return None
    try:
        loaded = profiles.read_text()
    except OSError as exc:
        return f"AppArmor is on but its loaded profiles cannot be read ({exc})"
    if LXC_PROFILE not in loaded:
        return (
            f"AppArmor is on but LXC's profile {LXC_PROFILE} is not loaded (the apparmor "
            "package loads it): every container start would fail"
        )
    return None


class LxcExec(CommandExec):
    """`lxc-attach -n <name> -P <path> -- argv...`."""

    rt: Lxc

    def argv(self, inst: Instance, argv: list[str]) -> list[str]:
        return [*self.rt.tool_argv(inst, "lxc-attach"), "--", *argv]


class LxcPause(Pause):
    """`lxc-freeze` and `lxc-unfreeze`."""

    rt: Lxc

    def _pause(self, inst: Instance) -> None:
        proc.run(self.rt.tool_argv(inst, "lxc-freeze"), timeout=60)

    def _resume(self, inst: Instance) -> None:
        proc.run(self.rt.tool_argv(inst, "lxc-unfreeze"), timeout=60)


class LxcSnapshot(Undriven):
    why = "virtbench does not drive lxc-checkpoint (yet)"


class Lxc(Runtime):
    name = "lxc"
    typical_launch_s = 0.1  # start + stop here without earlier boots
    spawns_launcher = True
    family = Family.CONTAINER
    description = "LXC container (lxc-start), config from the artifact rootfs"
    Exec = LxcExec
    Pause = LxcPause
    Snapshot = LxcSnapshot

    @classmethod
    def available(cls, options: BaseModel | None = None) -> Availability:
        if which("lxc-start") is None:
            return Availability(False, reason="lxc-start not on PATH", fix="apt-get install lxc")
        res = proc.run(["lxc-start", "--version"], check=False, timeout=10)
        if res.returncode != 0:
            return Availability(False, reason=f"lxc-start --version failed: {res.brief()}")
        version = res.stdout.strip()
        if (why := apparmor_unready()) is not None:
            return Availability(False, version=version, reason=why, fix=APPARMOR_FIX)
        return Availability(True, version=version)

    @property
    def lxcpath(self) -> Path:
        return self.ctx.scratch / "lxc"

    def tool_argv(self, inst: Instance, *rest: str) -> list[str]:
        return [*rest, "-n", inst.name, "-P", str(self.lxcpath)]

    def _prepare(self, inst: Instance) -> None:
        network = self.effective_network(inst.spec.network)
        self.ctx.state.record("cgroup", inst.name)
        self.ctx.state.record("container", inst.name, runtime="lxc", lxcpath=str(self.lxcpath))
        d = self.lxcpath / inst.name
        d.mkdir(parents=True, exist_ok=True)
        layout = self.ctx.layout
        config = lxc_config(inst, network, layout.version, layout.parent)
        config += f"lxc.log.file = {inst.log_path}\nlxc.log.level = ERROR\n"
        (d / "config").write_text(config)

    def start_argv(self, inst: Instance, detach: bool) -> list[str]:
        """The `lxc-start` of a prepared instance (foreground: also what a user would
        type, bench/byhand.py)."""
        return self.tool_argv(inst, "lxc-start", "-d" if detach else "-F")

    def _start(self, inst: Instance, detach: bool) -> None:
        launcher.launch(inst, self.start_argv(inst, detach), detach, START_TIMEOUT)

    def cgroup_names(self, inst: Instance) -> list[str]:
        """The payload's cgroup and the `[lxc monitor]`'s, next to it."""
        return [inst.name, inst.name + MONITOR_SUFFIX]

    def _stop(self, inst: Instance) -> None:
        p = inst.proc
        exited = p is not None and p.poll() is not None  # foreground: gone with its init
        if not exited and (self.lxcpath / inst.name / "config").exists():
            proc.run(self.tool_argv(inst, "lxc-stop", "-k"), check=False, timeout=30)
        if p is not None:  # what lxc-stop left of the launch: KILL, no TERM
            proc.stop(p, grace=0, reap=10)
        remove_tree(self.lxcpath / inst.name)
