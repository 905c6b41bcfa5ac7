"""Shared driver for low-level OCI runtimes (runc, crun, runsc): bundles virtbench writes
itself.

Each instance gets a bundle `<state>/bundles/<name>/config.json` (OCI runtime spec 1.0).
By default it is made as the container engines make theirs (options `rootfs` and
`security`): its root an overlay of the artifact's rootfs with an upper layer of its own
on disk (oci/rootfs.py), confined by the engines' default seccomp filter and, where the
host enables AppArmor, their profile (oci/security.py). `rootfs = "dir"` shares the
artifact's directory read-only instead, and `security = "minimal"` keeps capabilities,
no-new-privileges and masked paths only. Detached instances are started with `run -d`
(no monitor process stays behind); foreground ones with `run`, which deletes the
container when it exits. Stopping is `delete --force`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from virtbench.errors import InstanceError, VirtbenchError
from virtbench.host import cgroups, proc
from virtbench.host.facts import lsm
from virtbench.runtimes import launcher
from virtbench.runtimes.base import (
    Availability,
    Family,
    Instance,
    InstanceSpec,
    Runtime,
    remove_tree,
    which,
)
from virtbench.runtimes.controls import CommandExec, Pause, Snapshot, criu_problem
from virtbench.runtimes.leftovers import listing
from virtbench.runtimes.oci import apparmor
from virtbench.runtimes.oci import rootfs as oci_rootfs
from virtbench.runtimes.oci import security as oci_security

OCI_VERSION = "1.0.2"
CAPS = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
]


class OciOptions(BaseModel):
    """How a bundle is made: as the engines make theirs (the defaults), or plainly."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rootfs: Literal["overlay", "dir"] = "overlay"
    security: Literal["engine-default", "minimal"] = "engine-default"


MASKED_PATHS = ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"]
READONLY_PATHS = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]


def _namespaces(network: str, netns: Path | None) -> list[dict[str, str]]:
    """The container's namespaces: its own network (none), or the bridge's netns."""
    namespaces: list[dict[str, str]] = [{"type": t} for t in ("pid", "ipc", "uts", "mount")]
    if network == "none":
        namespaces.append({"type": "network"})
    elif network == "bridge":
        assert netns is not None
        namespaces.append({"type": "network", "path": str(netns)})
    return namespaces


def _resources(spec: InstanceSpec) -> dict[str, Any]:
    """The cgroup limits the spec asks for; no device is allowed."""
    resources: dict[str, Any] = {"devices": [{"allow": False, "access": "rwm"}]}
    if spec.memory_mib:
        resources["memory"] = {"limit": spec.memory_mib * 1024 * 1024}
    if spec.cpus:
        resources["cpu"] = {"cpus": spec.cpus}
    if spec.pids_limit:
        resources["pids"] = {"limit": spec.pids_limit}
    return resources


# destination, type, source and options (comma-separated) of the mounts every bundle has
MOUNTS = [
    ("/proc", "proc", "proc", ""),
    ("/dev", "tmpfs", "tmpfs", "nosuid,strictatime,mode=755,size=65536k"),
    ("/dev/pts", "devpts", "devpts", "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620"),
    ("/dev/shm", "tmpfs", "shm", "nosuid,noexec,nodev,mode=1777,size=65536k"),
    ("/sys", "sysfs", "sysfs", "nosuid,noexec,nodev,ro"),
    ("/tmp", "tmpfs", "tmpfs", "nosuid,nodev,mode=1777"),
]


def _mount(destination: str, type_: str, source: str, options: str) -> dict[str, Any]:
    """One OCI mount; `options` comma-separated (no "options" key when empty)."""
    mount: dict[str, Any] = {"destination": destination, "type": type_, "source": source}
    if options:
        mount["options"] = options.split(",")
    return mount


def _mounts(binds: list[tuple[Path, str]]) -> list[dict[str, Any]]:
    """MOUNTS (/proc, /dev, /sys, /tmp), then the instance's binds, read-write."""
    mounts = [_mount(*m) for m in MOUNTS]
    return mounts + [_mount(dest, "bind", str(host), "rbind,rw") for host, dest in binds]


def _process(inst: Instance) -> dict[str, Any]:
    """How the instance's command runs: as root, with CAPS, no new privileges."""
    caps = list(CAPS)
    return {
        "terminal": False,
        "user": {"uid": 0, "gid": 0},
        "args": list(inst.argv),
        "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", f"VIRTBENCH_INSTANCE={inst.spec.name}"],
        "cwd": "/",
        "capabilities": {k: caps for k in ("bounding", "effective", "permitted")},
        "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
        "noNewPrivileges": True,
    }


def bundle_config(
    inst: Instance,
    run_id: str,
    network: str,
    netns: Path | None,
    root: Path | None = None,
    cgroup_parent: str = cgroups.PARENT,
) -> dict[str, Any]:
    """The config.json for `inst` (pure: easy to test against the spec): its root the
    artifact's directory, read-only, or `root` (its own overlay), writable; its cgroup
    under `cgroup_parent` (the layout's)."""
    spec = inst.spec
    return {
        "ociVersion": OCI_VERSION,
        "process": _process(inst),
        "root": {"path": str(root or spec.rootfs), "readonly": root is None},
        "hostname": spec.name,
        "mounts": _mounts(inst.binds),
        "annotations": {"org.virtbench.run": run_id, "org.virtbench.instance": spec.name},
        "linux": {
            "namespaces": _namespaces(network, netns),
            "cgroupsPath": f"/{cgroup_parent}/{spec.name}",
            "resources": _resources(spec),
            "maskedPaths": list(MASKED_PATHS),
            "readonlyPaths": list(READONLY_PATHS),
        },
    }


class OciExec(CommandExec):
    """`<runtime> exec <name> argv...`."""

    rt: OciRuntime

    def argv(self, inst: Instance, argv: list[str]) -> list[str]:
        return [self.rt.binary, "exec", inst.name, *argv]


class OciPause(Pause):
    """`<runtime> pause` and `resume`."""

    rt: OciRuntime

    def _pause(self, inst: Instance) -> None:
        self.rt.control(inst, "pause", inst.name)

    def _resume(self, inst: Instance) -> None:
        self.rt.control(inst, "resume", inst.name)


class OciSnapshot(Snapshot):
    """`<runtime> checkpoint` to a directory and `restore` from it; runc and crun
    checkpoint through CRIU."""

    rt: OciRuntime

    def problem(self) -> str | None:
        return criu_problem() or None

    def checkpoint(self, inst: Instance, image_dir: Path) -> None:
        rt = self.rt
        rt.control(inst, "checkpoint", "--image-path", str(image_dir), inst.name, timeout=300)
        # the checkpointed container has stopped; its name is free for the restore
        proc.run([rt.binary, "delete", "--force", inst.name], check=False, timeout=30)

    def restore(self, inst: Instance, image_dir: Path) -> None:
        """As `run -d`: the restored container's output goes to the instance's log (a
        pipe would be held open by it, and never end)."""
        rt = self.rt
        argv = [
            rt.binary,
            *rt.global_args(inst),
            "restore",
            "--image-path",
            str(image_dir),
            "--bundle",
            str(rt.bundle_dir(inst)),
            rt.detach_flag,
            inst.name,
        ]
        launcher.launch(inst, argv, True, 300)


class OciRuntime(Runtime):
    """A runtime CLI with the runc command set (run, run -d, delete -f, list, state)."""

    binary: ClassVar[str]
    spawns_launcher = True
    family = Family.CONTAINER
    package: ClassVar[str]
    start_timeout: ClassVar[float] = 60.0
    detach_flag: ClassVar[str] = "-d"
    Options: ClassVar[type[OciOptions]] = OciOptions
    options: OciOptions
    Exec = OciExec
    Pause = OciPause
    Snapshot = OciSnapshot
    profile: str | None = None  # the run's own AppArmor profile, where it loaded one

    def conditions(self) -> dict[str, Any]:
        """Its storage and confinement, beside every figure."""
        o = self.options
        root = {
            "rootfs": "overlay (artifact lower, upper on disk)"
            if o.rootfs == "overlay"
            else "dir (the artifact, read-only, shared)"
        }
        return {**root, **oci_security.conditions(o.security, tuple(CAPS), self.profile)}

    def _setup(self) -> None:
        """Where AppArmor is on and no engine's profile is loaded to borrow: the run's
        own, with the engines' default rules (oci/apparmor.py), recorded first."""
        if (
            self.options.security != "engine-default"
            or lsm() != "apparmor"
            or oci_security.apparmor_profile() is not None
        ):
            return
        profile = apparmor.name(self.ctx.run_id, self.binary, self.label)
        self.ctx.state.record("apparmor", profile, runtime=self.name)
        apparmor.load(profile, self.binary, self.ctx.scratch / "apparmor")
        self.profile = profile

    def _close(self) -> None:
        if self.profile is not None:
            apparmor.unload(self.profile)
            self.profile = None

    @classmethod
    def available(cls, options: OciOptions | None = None) -> Availability:
        path = which(cls.binary)
        if path is None:
            return Availability(
                False, reason=f"{cls.binary} not on PATH", fix=f"apt-get install {cls.package}"
            )
        try:
            out = proc.run([path, "--version"], timeout=10).stdout
        except Exception as exc:
            return Availability(False, reason=f"{cls.binary} --version failed: {exc}")
        version = out.splitlines()[0].split()[-1] if out.strip() else "?"
        o = options or cls.Options()
        if o.security == "engine-default":
            why = oci_security.problem() or oci_security.apparmor_problem()
            if why is not None:
                return Availability(False, reason=why, fix='or security = "minimal"')
        return Availability(True, version=version)

    def bundle_dir(self, inst: Instance) -> Path:
        """Where `inst`'s bundle is (config.json, its root; a restore reads it again)."""
        return self.ctx.scratch / "bundles" / inst.name

    def _prepare(self, inst: Instance) -> None:
        network = self.effective_network(inst.spec.network)
        bundle = self.bundle_dir(inst)
        self.ctx.state.record("bundle", inst.name, path=str(bundle))
        self.ctx.state.record("container", inst.name, runtime=self.binary)
        self.ctx.state.record("cgroup", inst.name)
        bundle.mkdir(parents=True, exist_ok=True)
        o = self.options
        root = oci_rootfs.mount_overlay(self.ctx, inst) if o.rootfs == "overlay" else None
        config = bundle_config(
            inst, self.ctx.run_id, network, inst.netns, root, self.ctx.layout.parent
        )
        if o.security == "engine-default":
            self.confine(config)
        (bundle / "config.json").write_text(json.dumps(config))

    def confine(self, config: dict[str, Any]) -> None:
        """The engines' default confinement: their seccomp filter, and their AppArmor
        profile where one is loaded."""
        config["linux"]["seccomp"] = oci_security.engine_seccomp(tuple(CAPS))[0]
        profile = oci_security.apparmor_profile() or self.profile
        if profile is not None:
            config["process"]["apparmorProfile"] = profile

    def global_args(self, inst: Instance) -> list[str]:
        """Flags before the subcommand (runsc's platform and network)."""
        del inst
        return []

    def run_argv(self, inst: Instance, detach: bool) -> list[str]:
        """The `run` command of a prepared instance (foreground: also what a user would
        type, bench/byhand.py)."""
        bundle = self.bundle_dir(inst)
        argv = [self.binary, *self.global_args(inst), "run"]
        return [*argv, *([self.detach_flag] if detach else []), "--bundle", str(bundle), inst.name]

    def _start(self, inst: Instance, detach: bool) -> None:
        argv = self.run_argv(inst, detach)
        launcher.launch(inst, argv, detach, self.start_timeout, hint=self.hang_hint())

    def hang_hint(self) -> str:
        """What to add to a start that timed out (a likely cause)."""
        return ""

    def _stop(self, inst: Instance) -> None:
        if inst.proc is not None:
            proc.stop(inst.proc)
        res = proc.run([self.binary, "delete", "--force", inst.name], check=False, timeout=30)
        # a foreground container deletes itself when it exits: a delete that failed is
        # an error only if the container is still there
        if res.returncode != 0 and inst.name in self.list_instances():
            raise InstanceError(f"{self.binary} delete {inst.name}: {res.brief()}")
        remove_tree(self.bundle_dir(inst))
        if self.options.rootfs == "overlay":
            oci_rootfs.remove_overlay(self.ctx, inst)

    # --- pause and checkpoint (OciPause, OciSnapshot) --------------------------------
    def control(self, inst: Instance, *args: str, timeout: float = 60) -> None:
        """Its command on `inst` (`runc pause <name>`, `checkpoint`, ...): InstanceError
        with its words when it fails or does not return."""
        what = next(a for a in args if not a.startswith("-"))
        try:
            res = proc.run([self.binary, *args], check=False, timeout=timeout)
        except VirtbenchError as exc:  # it did not return: this instance's failure
            raise InstanceError(f"{self.binary} {what} {inst.name}: {exc}") from None
        if res.returncode != 0:
            raise InstanceError(f"{self.binary} {what} {inst.name}: {res.brief()}")

    @classmethod
    def list_instances(cls) -> list[str]:
        """Names of every container this runtime knows (for clean)."""
        if which(cls.binary) is None:
            return []
        out = listing([cls.binary, "list", "--format", "json"], timeout=30)
        return [c["id"] for c in json.loads(out or "null") or [] if "id" in c]

    @classmethod
    def remove_instance(cls, name: str) -> None:
        proc.run([cls.binary, "delete", "--force", name], check=False, timeout=30)

    @classmethod
    def list_objects(cls) -> list[tuple[str, str]]:
        own = [("apparmor", p) for p in cls.profiles()]
        return [("instance", n) for n in cls.list_instances()] + own

    @classmethod
    def profiles(cls) -> list[str]:
        """The AppArmor profiles runs loaded for this runtime's bundles (none where
        AppArmor is off)."""
        if lsm() != "apparmor":
            return []
        return [p for p in apparmor.loaded() if apparmor.of(p, cls.binary)]

    @classmethod
    def remove_object(cls, kind: str, name: str) -> None:
        if kind == "instance":
            cls.remove_instance(name)
        elif kind == "apparmor":
            apparmor.unload(name)
