"""`lxd`: LXD system containers, on an image imported from the artifact rootfs.

Daemon: if an LXD already answers on this host's socket (/var/lib/lxd), the run uses it
and leaves it running (where systemd holds that socket and LXD is not running, the socket
is left alone: a connection would start it). Otherwise the run starts its own `lxd` with
a private LXD_DIR in the run's state directory, inside an empty network namespace
(`vb-<run>-lxd`): at start LXD looks up images.linuxcontainers.org, and no traffic may
leave this host. That daemon, its directory and its namespace go away with the run.

Per run, everything named `vb-<run>-...`: a `dir` storage pool, a profile (root disk on
that pool, `boot.autostart` off) and the image (metadata.yaml + rootfs tarballs, no
remote). Instances are unprivileged (LXD's default) and launched with `lxc launch`;
`raw.lxc` makes the workload the container's init (`lxc.init.cmd`), puts its cgroups at
`virtbench/<name>` (payload) and `virtbench/<name>-m` (the `[lxc monitor]`, counted with
the instance) and adds the probe's bind mount. Networks: `none` (LXD's own empty netns);
`host` and `bridge` share the host's or the virtbench bridge's per-instance namespace
(`lxc.namespace.share.net`) -- a namespace an unprivileged container does not own, so
those instances get no /sys (sysfs cannot be mounted there).

Foreground (`hello`): LXD's `lxc launch` returns about 5 s after an init that exits at
once (it waits for a RUNNING state it never sees) and LXD does not report the init's
exit status. The exit is therefore taken from the payload cgroup (CPU time charged, no
process left), the console output is copied to the instance log, and the hyperfine check
compares the detached launch (`spawn_to_started` of `sleep`) instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from virtbench import naming
from virtbench.errors import InstanceError, ListingError, RuntimeUnavailable
from virtbench.host import cgroup_stats, proc, systemd
from virtbench.host.unixhttp import UnixHTTPConnection
from virtbench.runtimes import launcher, traces
from virtbench.runtimes.base import (
    Availability,
    Family,
    Instance,
    Runtime,
    remove_tree,
    which,
)
from virtbench.runtimes.controls import CliPause, CommandExec, Undriven
from virtbench.runtimes.daemon import Daemon
from virtbench.runtimes.leftovers import listing
from virtbench.runtimes.lxc.lxc import Lxc
from virtbench.runtimes.lxc.lxd_config import image_tarballs, limits_cpu, raw_lxc
from virtbench.runtimes.observe import RunDaemons

SYSTEM_DIR = Path("/var/lib/lxd")
START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0  # a stop LXD is still busy with (see the module doc) ends after ~5 s
RUN_KEY = "user.virtbench.run"
POLL_S = 0.002
CONSOLE_STEADY_S = 0.2  # the console log is complete once it stopped growing this long
CONSOLE_WAIT_S = 10.0
LAUNCH_GRACE_S = 15.0  # `lxc launch` returns ~5 s after an init that exits at once


def answers(lxd_dir: Path, timeout: float = 2.0) -> bool:
    """Does an LXD daemon answer on `lxd_dir`'s socket (GET /1.0)? Where systemd holds the
    host's socket (lxd.socket) and its service is not running, nothing is asked: a
    connection would start the user's LXD (the run then starts its own, as elsewhere)."""
    if lxd_dir == SYSTEM_DIR and _socket_only():
        return False
    sock = lxd_dir / "unix.socket"
    if not sock.exists():
        return False
    conn = UnixHTTPConnection(sock, timeout, host="lxd")
    try:
        conn.request("GET", "/1.0")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _socket_only() -> bool:
    """Whether systemd holds the host's LXD socket while LXD itself is not running."""
    return systemd.active("lxd.socket") and not systemd.active("lxd.service")


class LxdExec(CommandExec):
    """`lxc exec <name> -- argv...`, in the environment that reaches the run's LXD."""

    rt: Lxd

    def argv(self, inst: Instance, argv: list[str]) -> list[str]:
        return ["lxc", "exec", inst.name, "--", *argv]

    def env(self) -> dict[str, str] | None:
        return self.rt.env


class LxdPause(CliPause):
    """`lxc pause`, and `lxc start` to resume."""

    resume_word = "start"


@dataclass
class LxdState:
    """What the lxd driver keeps of an instance: its `lxc launch` (made while prepared)."""

    launch: list[str] = field(default_factory=list)


class LxdSnapshot(Undriven):
    why = "virtbench does not drive LXD's stateful snapshots (yet)"


class LxdDaemons(RunDaemons):
    names = ("lxd",)  # when this run started it


class Lxd(Runtime):
    name = "lxd"
    typical_launch_s = 2.0  # start + stop here without earlier boots
    spawns_launcher = True
    family = Family.CONTAINER
    description = "LXD system container (lxc launch), image imported from the artifact rootfs"
    Exec = LxdExec
    Pause = LxdPause
    State = LxdState
    Snapshot = LxdSnapshot
    Daemons = LxdDaemons

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lxd_dir = SYSTEM_DIR
        self.env: dict[str, str] = dict(os.environ)
        self.objects: list[tuple[str, str]] = []  # (kind, name) this run created, in order
        self.image = self.profile = ""

    @classmethod
    def available(cls, options: BaseModel | None = None) -> Availability:
        for binary in ("lxd", "lxc", "nsenter"):
            if which(binary) is None:
                return Availability(
                    False, reason=f"{binary} not on PATH", fix="apt-get install lxd util-linux"
                )
        res = proc.run(["lxd", "--version"], check=False, timeout=20)
        if res.returncode != 0:
            return Availability(False, reason=f"lxd --version failed: {res.brief()}")
        if answers(SYSTEM_DIR):
            return Availability(True, version=f"{res.stdout.strip()} (uses the running LXD)")
        return Availability(
            True, version=f"{res.stdout.strip()} (not running: virtbench starts its own)"
        )

    # --- the daemon and the run's objects ----------------------------------------------
    def cli(self, *args: str, check: bool = True, timeout: float = 120) -> proc.Result:
        """`lxc` (LXD's client) with `args`, in the run's environment."""
        return proc.run(["lxc", *args], env=self.env, check=check, timeout=timeout)

    def _setup(self) -> None:
        rid = self.ctx.run_id
        if not answers(SYSTEM_DIR):
            self._start_daemon()
        pool, self.profile = naming.name(rid, "pool"), naming.name(rid, "profile")
        self._create("pool", pool, ["storage", "create", pool, "dir"])
        self._create("profile", self.profile, ["profile", "create", self.profile])
        self.cli("profile", "set", self.profile, "boot.autostart", "false")
        self.cli("profile", "device", "add", self.profile, "root", "disk", "path=/", f"pool={pool}")
        rootfs = self.ctx.rootfs
        if rootfs is None:
            raise InstanceError(f"{self.label}: no artifact rootfs to import")
        self.image = f"vb-{rid}-rootfs"
        meta, root = image_tarballs(rootfs, f"virtbench {rootfs.name} run {rid}")
        d = self.ctx.scratch / "lxd-image"
        d.mkdir(exist_ok=True)
        (d / "meta.tar").write_bytes(meta)
        (d / "rootfs.tar").write_bytes(root)
        self._create(
            "image",
            self.image,
            ["image", "import", str(d / "meta.tar"), str(d / "rootfs.tar"), "--alias", self.image],
        )
        remove_tree(d)

    def image_size(self) -> tuple[int, str] | None:
        """The imported image's size as LXD reports it (its compressed tarballs)."""
        if not self.image:
            return None
        alias = json.loads(self.cli("query", f"/1.0/images/aliases/{self.image}").stdout)
        image = json.loads(self.cli("query", f"/1.0/images/{alias['target']}").stdout)
        return int(image["size"]), "lxd image size"

    def _create(self, kind: str, name: str, args: list[str]) -> None:
        self.ctx.state.record(kind, name, runtime=self.label)
        self.objects.append((kind, name))
        self.cli(*args)

    def _start_daemon(self) -> None:
        """This run's own LXD: private directory, empty network namespace."""
        self.lxd_dir = self.ctx.scratch / "lxd"
        for d in self.lxd_dir.parents:  # an unprivileged container's root must pass
            if not d.stat().st_mode & stat.S_IXOTH:
                raise RuntimeUnavailable(
                    f"lxd: {d} is not searchable by others, so unprivileged containers "
                    f"below it cannot start (chmod o+x {d}, or set VIRTBENCH_STATE_DIR)"
                )
        self.lxd_dir.mkdir(mode=0o711, exist_ok=True)
        self.env = {
            **os.environ,
            "LXD_DIR": str(self.lxd_dir),
            "LXD_CONF": str(self.ctx.scratch / "lxd-client"),
        }
        netns = f"vb-{self.ctx.run_id}-lxd"
        self.ctx.state.record("netns", netns)
        proc.run(["ip", "netns", "add", netns])
        pivots = [root / "lxc.pivot" for root in self.ctx.layout.roots()]
        pivots = [p for p in pivots if not p.exists()]

        def after_stop() -> None:
            # what LXD left mounted in its directory, removed as `clean` would
            prefix = f"{self.lxd_dir}/"
            traces.unmount([m for m in traces.mount_points() if m.startswith(prefix)])
            remove_tree(self.lxd_dir)
            proc.run(["ip", "netns", "delete", netns], check=False)
            for p in pivots:  # liblxc's, made on our behalf; only if still empty
                with contextlib.suppress(OSError):
                    p.rmdir()

        argv = ["nsenter", f"--net=/run/netns/{netns}", "lxd", "--group", "root"]
        argv += ["--logfile", str(self.ctx.scratch / "lxd.log")]
        try:
            lxd = Daemon(
                "lxd",
                lambda: answers(self.lxd_dir),
                argv,
                ready_timeout=60,
                env=self.env,
                after_stop=after_stop,
            )
            self.ctx.daemons.ensure(lxd)
        except BaseException:
            after_stop()
            raise

    def _host_netns(self) -> Path:
        """The host's network namespace (ours) under a name (liblxc cannot open another
        process's /proc/PID/ns/net where it sets up the container; a bind mount it can)."""
        name = f"vb-{self.ctx.run_id}-host"
        path = Path("/run/netns") / name
        if not path.exists():
            self.ctx.state.record("netns", name)
            self.objects.append(("netns", name))
            proc.run(["ip", "netns", "attach", name, str(os.getpid())])
        return path

    def engine_gone(self) -> str | None:
        """This run's LXD died, or the host's stopped answering. Nothing to revive: the
        instances' processes go with their cgroups, and this run's own LXD directory (the
        image, pool and profile in it) with its daemon."""
        why = self.ctx.daemons.gone("lxd")
        if why is None and self._set_up and not answers(self.lxd_dir):
            why = f"LXD no longer answers in {self.lxd_dir}"
        return why

    def _close(self) -> None:
        for kind, name in reversed(self.objects):
            if kind == "image":
                self.cli("image", "delete", name, check=False)
            elif kind == "profile":
                self.cli("profile", "delete", name, check=False)
            elif kind == "pool":
                self.cli("storage", "delete", name, check=False)
            elif kind == "netns":  # only the name goes: it is the host's namespace
                proc.run(["ip", "netns", "delete", name], check=False)
        self.objects = []

    # --- instances -----------------------------------------------------------------------
    def _prepare(self, inst: Instance[LxdState]) -> None:
        network = self.effective_network(inst.spec.network)
        self.ctx.state.record("container", inst.name, runtime=self.label)
        self.ctx.state.record("cgroup", inst.name)
        spec = inst.spec
        netns = self._host_netns() if network == "host" else inst.netns
        config = {
            RUN_KEY: self.ctx.run_id,
            "raw.lxc": raw_lxc(
                inst, network, netns, self.ctx.layout.version, self.ctx.layout.parent
            ),
        }
        if spec.memory_mib:
            config["limits.memory"] = f"{spec.memory_mib}MiB"
        if spec.cpus:
            config["limits.cpu"] = limits_cpu(spec.cpus)
        if spec.pids_limit:
            config["limits.processes"] = str(spec.pids_limit)
        argv = ["lxc", "launch", self.image, spec.name, "--profile", self.profile]
        for key, value in config.items():
            argv += ["--config", f"{key}={value}"]
        inst.own.launch = argv

    def _start(self, inst: Instance[LxdState], detach: bool) -> None:
        launcher.launch(inst, inst.own.launch, detach, START_TIMEOUT, env=self.env)

    cgroup_names = Lxc.cgroup_names  # the payload's and the [lxc monitor]'s, as for lxc

    def _wait(self, inst: Instance, timeout: float) -> int:
        """The init's exit, seen in its cgroup (see the module doc); then the launch's
        own result, which tells a workload that ran from a start that failed."""
        p = inst.proc
        assert p is not None
        deadline = time.monotonic() + timeout
        while not cgroup_stats.ran_and_emptied(self.ctx.layout, inst.name):
            if p.poll() not in (None, 0) or time.monotonic() > deadline:
                break
            time.sleep(POLL_S)
        else:
            inst.t_exit_ns = time.monotonic_ns()
        rc = proc.wait(p, max(deadline - time.monotonic(), 0) + LAUNCH_GRACE_S)
        if rc != 0:
            raise InstanceError(f"lxc launch {inst.name} failed: {inst.log_tail()}")
        if inst.t_exit_ns is None:
            raise proc.TimeoutExpired(inst.own.launch, timeout)
        return 0  # LXD does not report the init's exit status

    def _after_exit(self, inst: Instance) -> None:
        console = self.lxd_dir / "logs" / inst.name / "console.log"
        deadline = time.monotonic() + CONSOLE_WAIT_S  # the monitor writes it shortly after
        text, steady_since = b"", time.monotonic()
        while time.monotonic() < deadline:  # until it stops growing (it may be half written)
            with contextlib.suppress(OSError):
                now = console.read_bytes()
                if now != text:
                    text, steady_since = now, time.monotonic()
            if text and time.monotonic() - steady_since > CONSOLE_STEADY_S:
                break
            time.sleep(0.02)
        if text:
            with open(inst.log_path, "ab") as log:
                log.write(text)

    def _stop(self, inst: Instance) -> None:
        p = inst.proc
        deadline = time.monotonic() + STOP_TIMEOUT
        while True:
            res = self.cli("delete", "--force", inst.name, check=False, timeout=STOP_TIMEOUT)
            if res.returncode == 0 or "not found" in res.stderr.lower():
                break
            if "busy" not in res.stderr or time.monotonic() > deadline:
                raise InstanceError(f"lxc delete {inst.name} failed: {res.brief()}")
            time.sleep(0.1)  # LXD still finishing the launch of an init that exited
        if p is not None:
            with contextlib.suppress(proc.TimeoutExpired):
                proc.wait(p, 30)
            proc.stop(p)  # the launch, if it outlived the delete

    # --- clean -------------------------------------------------------------------------
    @staticmethod
    def _system_env() -> dict[str, str]:
        """The environment of an `lxc` client talking to the host's own LXD."""
        return {k: v for k, v in os.environ.items() if k not in ("LXD_DIR", "LXD_CONF")}

    @classmethod
    def _system_lxc(cls, *args: str) -> Any:
        out = listing(["lxc", *args, "--format", "json"], env=cls._system_env())
        try:
            return json.loads(out or "[]") or []
        except ValueError as exc:
            raise ListingError(f"`lxc {' '.join(args)}` printed no JSON: {out[:80]!r}") from exc

    @classmethod
    def list_objects(cls) -> list[tuple[str, str]]:
        """What the host's own LXD holds (a run's private LXD dies with its directory)."""
        if which("lxc") is None or not answers(SYSTEM_DIR):
            return []
        found = [("instance", i["name"]) for i in cls._system_lxc("list")]
        for img in cls._system_lxc("image", "list"):
            found += [("image", a["name"]) for a in img.get("aliases") or []]
        found += [("profile", p["name"]) for p in cls._system_lxc("profile", "list")]
        found += [("pool", p["name"]) for p in cls._system_lxc("storage", "list")]
        return found

    @classmethod
    def remove_object(cls, kind: str, name: str) -> None:
        argv = {
            "instance": ["delete", "--force", name],
            "image": ["image", "delete", name],
            "profile": ["profile", "delete", name],
            "pool": ["storage", "delete", name],
        }[kind]
        proc.run(["lxc", *argv], env=cls._system_env(), check=False, timeout=120)
