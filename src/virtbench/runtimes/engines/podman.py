"""`podman`: Podman through its CLI, on an image imported from the artifact rootfs.

Options (spec `[runtime.podman]`): `oci_runtime` = crun | runc | runsc (labels
`podman:runc`, `podman:runsc`), `image` = an image already in this host's podman storage
(the artifact's static programs are bind-mounted into it).

Podman has no daemon. virtbench points it at a containers.conf of its own
(CONTAINERS_CONF): its cgroup manager as podman's default here (systemd's where systemd
is the init, cgroupfs elsewhere: engines/placement.py), default ulimits this host allows
(its hard nofile limit is below podman's default), file events, its version's own network
backend (CNI up to podman 4, netavark from 5), and runsc registered.
runsc gets `--network=host` (inside the container's network namespace, so `none` stays
none; its own netstack fails on some kernels), `--host-uds=open` for the unix-socket
probe and the ptrace platform. Containers get the instance's cgroup (or slice) as their
parent; conmon, the per-container monitor, is counted with the instance. `bridge` is a
podman network this run creates (`vb-<run>-net`). Everything carries `org.virtbench.run=<run id>`.
"""

from __future__ import annotations

import functools
import json
import os
import resource
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import psutil

from virtbench.errors import InstanceError
from virtbench.host import proc, state, systemd
from virtbench.host.sysctl import namespaced
from virtbench.runtimes import launcher, owners, traces
from virtbench.runtimes.base import (
    Availability,
    Instance,
    remove_tree,
    which,
)
from virtbench.runtimes.controls import CliPause, CommandExec, Undriven
from virtbench.runtimes.engines.base import Engine, EngineOptions, engine_exit_reason
from virtbench.runtimes.engines.placement import Placement
from virtbench.runtimes.leftovers import listing
from virtbench.runtimes.observe import Observe

RUNSC_FLAGS = ["platform=ptrace", "network=host", "host-uds=open"]
START_TIMEOUT = 120.0


class PodmanOptions(EngineOptions):
    oci_runtime: Literal["crun", "runc", "runsc"] = "crun"


def network_backend(version: str) -> str:
    """Podman's own network backend for its version: CNI up to 4 (Debian 12's), netavark
    from 5 (Debian 13's, built without CNI)."""
    major = version.split(".", 1)[0]
    return "netavark" if major.isdigit() and int(major) >= 5 else "cni"


def containers_conf(cgroup_manager: str = "cgroupfs", backend: str = "cni") -> str:
    """The containers.conf virtbench runs podman with."""
    # Podman's defaults exceed this host's hard limits (and crun then fails setrlimit):
    # ask for what the host allows. (nproc at the very hard limit is refused too, hence
    # the lower cap.)
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    nofile = 1048576 if nofile == resource.RLIM_INFINITY else min(nofile, 1048576)
    nproc = 32768 if nproc == resource.RLIM_INFINITY else min(nproc, 32768)
    runtimes = "".join(
        f'{name} = ["{path}"]\n' for name in ("crun", "runc", "runsc") if (path := which(name))
    )
    return (
        "[containers]\n"
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
        'log_driver = "k8s-file"\n'
        "[network]\n"
        f'network_backend = "{backend}"\n'
        "[engine]\n"
        f'cgroup_manager = "{cgroup_manager}"\n'
        'events_logger = "file"\n'
        "[engine.runtimes]\n" + runtimes
    )


class PodmanExec(CommandExec):
    """`podman exec <name> argv...`, with virtbench's containers.conf."""

    rt: Podman

    def argv(self, inst: Instance, argv: list[str]) -> list[str]:
        return self.rt.podman_argv("exec", inst.name, *argv)

    def env(self) -> dict[str, str] | None:
        return self.rt.env


class PodmanPause(CliPause):
    """`podman pause` and `unpause`."""

    resume_word = "unpause"


@dataclass
class PodmanState:
    """What the podman driver keeps of an instance: its `podman run` arguments (made while
    prepared) and its conmon, which stays outside its cgroup."""

    run_args: list[str] = field(default_factory=list)
    conmon: list[psutil.Process] = field(default_factory=list)


class PodmanSnapshot(Undriven):
    why = "virtbench does not drive podman's checkpoint (yet)"


class PodmanObserve(Observe):
    """How a container ended, from conmon and `podman inspect`; conmon is counted with
    the instance."""

    rt: Podman

    def exit_reason(self, inst: Instance) -> str | None:
        if inst.proc is not None:  # foreground: `podman run` itself
            return super().exit_reason(inst)
        if owners.any_alive(inst.own.conmon):
            return None  # conmon watches the container until it exits (cheap to ask)
        state = self.rt.inspect(inst).get("State")
        if not state:
            return "ended (podman no longer knows it)"
        return engine_exit_reason(
            state.get("Running"), state.get("ExitCode"), state.get("OOMKilled"), state.get("Error")
        )

    def owner_pids(self, inst: Instance) -> list[int]:
        return [p.pid for p in inst.own.conmon if p.is_running()]


class Podman(Engine):
    name = "podman"
    typical_launch_s = 0.8  # start + stop here without earlier boots
    spawns_launcher = True
    description = "Podman (CLI), image imported from the artifact rootfs"
    Options = PodmanOptions
    options: PodmanOptions
    variants = ("crun", "runc", "runsc")
    default_variant = "crun"
    Exec = PodmanExec
    Pause = PodmanPause
    State = PodmanState
    Snapshot = PodmanSnapshot
    Observe = PodmanObserve

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.env: dict[str, str] = {}
        self.placement = Placement(self.cgroup_manager(), self.ctx.layout.parent)

    def cgroup_manager(self) -> str:
        """As podman's own default on this host: systemd's where systemd is the init;
        cgroupfs under runsc, whose build here takes no systemd cgroup paths."""
        if systemd.booted() and self.options.oci_runtime != "runsc":
            return "systemd"
        return "cgroupfs"

    def conditions(self) -> dict[str, Any]:
        """The engine's, and where its containers' cgroups are (placement.py)."""
        words = self.placement.words("podman", "virtbench's containers.conf:")
        return {**super().conditions(), "cgroups": words}

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            self.placement.release(self.ctx.run_id, self.ctx.layout.roots())

    @classmethod
    def available(cls, options: PodmanOptions | None = None) -> Availability:
        oci = (options or PodmanOptions()).oci_runtime
        if which("podman") is None:
            return Availability(False, reason="podman not on PATH", fix="apt-get install podman")
        if which(oci) is None:
            return Availability(False, reason=f"{oci} not on PATH", fix=f"apt-get install {oci}")
        res = proc.run(["podman", "--version"], check=False, timeout=20)
        if res.returncode != 0:
            return Availability(False, reason=f"podman --version failed: {res.brief()}")
        return Availability(True, version=res.stdout.split()[-1])

    # --- helpers -------------------------------------------------------------------
    def storage_driver(self) -> str:
        return self._graph_driver

    @functools.cached_property
    def _graph_driver(self) -> str:
        """Its storage's graph driver, as `podman info` says (asked once)."""
        res = self.cli("info", "--format", "{{.Store.GraphDriverName}}", timeout=60, check=False)
        return res.stdout.strip() if res.returncode == 0 else "unknown"

    def podman_argv(self, *args: str) -> list[str]:
        """`podman` with this label's OCI runtime (and runsc's flags), then `args`."""
        argv = ["podman", f"--runtime={self.options.oci_runtime}"]
        if self.options.oci_runtime == "runsc":
            argv += [f"--runtime-flag={f}" for f in RUNSC_FLAGS]
        return [*argv, *args]

    def cli(self, *args: str, check: bool = True, timeout: float = 120) -> proc.Result:
        """`podman` (this label's) with `args`, in the run's environment."""
        return proc.run(self.podman_argv(*args), env=self.env, timeout=timeout, check=check)

    # --- the engine -------------------------------------------------------------------
    def _connect(self) -> None:
        conf = self.ctx.scratch / "containers.conf"
        said = proc.run(["podman", "--version"], check=False, timeout=20).stdout.split()
        backend = network_backend(said[-1] if said else "?")
        conf.write_text(containers_conf(self.placement.driver, backend))
        self.env = {**os.environ, "CONTAINERS_CONF": str(conf)}
        self._traces = traces.snapshot((), (), firewall=True)  # before CNI's first chain

    def _disconnect(self) -> None:
        """CNI's firewall plugin leaves its chains (CNI-FORWARD, CNI-ADMIN) after the
        network goes: removed if they were not there before, and no other run is alive
        (its containers may sit behind them)."""
        before = getattr(self, "_traces", None)
        if before is None or state.live_runs() - {self.ctx.run_id}:
            return
        errors = traces.remove_new(before, (), (), firewall=True)
        if errors:
            raise InstanceError(f"podman's network left {len(errors)}: {'; '.join(errors[:3])}")

    def _has_image(self, image: str) -> bool:
        return self.cli("image", "exists", image, check=False).returncode == 0

    def _image_bytes(self, image: str) -> int:
        return int(self.cli("image", "inspect", "--format", "{{.Size}}", image).stdout)

    def _import(self, tar: bytes, tag: str) -> None:
        path = self.ctx.scratch / "podman-rootfs.tar"
        path.write_bytes(tar)
        self.cli("import", "--change", f"LABEL {self.run_label}", str(path), tag)
        path.unlink()

    def _create_network(self, name: str) -> None:
        self.cli("network", "create", "--disable-dns", "--label", self.run_label, name)

    def _remove(self, kind: str, name: str) -> None:
        if kind == "network":
            self.cli("network", "rm", "-f", name, check=False)
            # CNI's host-local IP allocations outlive the network in podman 4.3
            remove_tree(Path("/var/lib/cni/networks") / name)
        else:
            self.cli("rmi", "-f", name, check=False)

    # --- lifecycle -------------------------------------------------------------------
    def _prepare(self, inst: Instance[PodmanState]) -> None:
        network = self.effective_network(inst.spec.network)
        spec = inst.spec
        self.ctx.state.record("container", inst.name, runtime=self.label)
        self.ctx.state.record("cgroup", inst.name)
        args = [
            "--name",
            spec.name,
            "--label",
            self.run_label,
            "--env",
            f"VIRTBENCH_INSTANCE={spec.name}",
            "--network",
            self._bridge_network() if network == "bridge" else network,
            "--cgroup-parent",
            self.placement.cgroup_parent(spec.name),
            "--pull",
            "never",
        ]
        if spec.sysctls and network != "host":  # in the container's own network namespace
            for key, value in namespaced(dict(spec.sysctls)).items():
                args += ["--sysctl", f"{key}={value}"]
        if spec.memory_mib:
            args += ["--memory", f"{spec.memory_mib}m"]
        if spec.cpus:
            args += ["--cpuset-cpus", spec.cpus]
        if spec.pids_limit and self.applies_pids_limit():
            # runsc 20221219 under podman then starts its sandbox in the root cgroups,
            # outside every limit and out of sight: no pids limit rather than that
            args += ["--pids-limit", str(spec.pids_limit)]
        for host, dest in inst.binds:
            args += ["--volume", f"{host}:{dest}"]
        for host, dest in self.program_binds(spec):
            args += ["--volume", f"{host}:{dest}:ro"]
        inst.own.run_args = args

    def _start(self, inst: Instance[PodmanState], detach: bool) -> None:
        argv = self.podman_argv("run", *(["-d"] if detach else []), *inst.own.run_args)
        argv += [self.image, *inst.argv]
        launcher.launch(inst, argv, detach, START_TIMEOUT, env=self.env)

    def inspect(self, inst: Instance) -> dict[str, Any]:
        """`podman inspect` of `inst`'s container ({} when there is none)."""
        res = self.cli("inspect", "--type", "container", inst.name, check=False, timeout=30)
        try:
            data = json.loads(res.stdout or "[]")
        except ValueError:
            return {}
        return data[0] if data else {}

    def _after_start(self, inst: Instance) -> None:
        info = self.inspect(inst)
        state = info.get("State") or {}
        # conmon and everything under it; just conmon once the container has exited
        tree = owners.supervisor_tree(state.get("Pid"), lambda n: n == "conmon")
        conmon = state.get("ConmonPid")
        inst.own.conmon = owners.snapshot(tree or ([conmon] if conmon else []))
        if self.network is not None and inst.spec.network == "bridge":
            nets = (info.get("NetworkSettings") or {}).get("Networks") or {}
            inst.address = (nets.get(self.network) or {}).get("IPAddress") or None

    def _stop(self, inst: Instance) -> None:
        p = inst.proc
        if p is not None:
            proc.stop(p)
        self.cli("rm", "--force", "--time", "0", inst.name, check=False, timeout=60)
        self.observe.reap_later(inst.own.conmon)

    def applies_pids_limit(self) -> bool:
        return self.options.oci_runtime != "runsc"  # see _args: runsc would escape it

    # --- clean -------------------------------------------------------------------------
    @classmethod
    def list_objects(cls) -> list[tuple[str, str]]:
        if which("podman") is None:
            return []
        found: list[tuple[str, str]] = []
        for c in json.loads(listing(["podman", "ps", "-a", "--format", "json"]) or "[]") or []:
            found += [("instance", n) for n in c.get("Names") or []]
        nets = listing(["podman", "network", "ls", "--format", "json"])
        found += [("network", n["name"]) for n in json.loads(nets or "[]") or []]
        for img in json.loads(listing(["podman", "images", "--format", "json"]) or "[]") or []:
            found += [("image", _short(n)) for n in img.get("Names") or []]
        return found

    @classmethod
    def remove_object(cls, kind: str, name: str) -> None:
        argv = {
            "instance": ["podman", "rm", "--force", "--time", "0", name],
            "network": ["podman", "network", "rm", "--force", name],
            "image": ["podman", "rmi", "--force", name],
        }[kind]
        proc.run(argv, check=False, timeout=120)


def _short(image_name: str) -> str:
    """`localhost/vb-abc123-rootfs:tag` -> `vb-abc123-rootfs:tag` (our label prefix first)."""
    return Path(image_name).name if image_name.startswith("localhost/") else image_name
