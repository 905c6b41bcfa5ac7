"""`docker`: Docker Engine through the Docker SDK for Python, on an image imported from
the artifact rootfs (no registry).

Options (spec `[runtime.docker]`): `oci_runtime` = runc | crun | runsc (also picked by the
labels `docker:crun`, `docker:runsc`), `image` = an image already on this host to use
instead of the artifact's (the artifact's static programs are bind-mounted into it, so
`vb-ready` and friends work in any image).

When no daemon answers on the socket, the run starts dockerd itself with a config
virtbench owns (overlay2, cgroupfs, crun and runsc registered) and stops it at the end;
a daemon that was already running is used as it is, and `available()` says when it
lacks the requested OCI runtime. Containers get the instance's cgroup as their parent
(`/virtbench/<name>`), or, where dockerd places them through systemd (its systemd cgroup
driver), the instance's slice (`vb-<run>-<n>.slice`, engines/placement.py), so their cgroup
sits under the instance's; the containerd-shim (and for runsc the sandbox
and gofer below it) is added to the instance's processes. Network `none` and `host` are
Docker's; `bridge` is a Docker bridge network this run creates (`vb-<run>-net`), with the
workload's ports published on 127.0.0.1. The image, network and containers carry the
label `org.virtbench.run=<run id>` and names starting `vb-<run id>-`.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from dataclasses import dataclass, field
from typing import Any, Literal

import psutil

from virtbench.errors import InstanceError
from virtbench.host import proc
from virtbench.host.sysctl import namespaced
from virtbench.runtimes import owners, traces
from virtbench.runtimes.base import Availability, Instance, which
from virtbench.runtimes.daemon import Daemon
from virtbench.runtimes.engines.base import LABEL, Engine, EngineOptions, engine_exit_reason
from virtbench.runtimes.engines.docker_controls import DockerExec, DockerPause, DockerSnapshot
from virtbench.runtimes.engines.dockerd import (
    CONTAINERD_PIDFILE,
    OCI_PATHS,
    SOCKET,
    TRACE_DIRS,
    TRACE_MOUNTS,
    client,
    daemon_config,
    daemon_up,
    dead_containerd,
    dockerd_argv,
    orphans,
    remove_engine_leftovers,
)
from virtbench.runtimes.engines.placement import Placement
from virtbench.runtimes.observe import Observe, RunDaemons


class DockerOptions(EngineOptions):
    oci_runtime: Literal["runc", "crun", "runsc"] = "runc"


@dataclass
class DockerState:
    """What the docker driver keeps of an instance: the container's creation (made while
    prepared, sent at launch), its id, its containerd-shim and whether its output was
    fetched into its log."""

    create: dict[str, Any] | None = None
    container_id: str | None = None
    shims: list[psutil.Process] = field(default_factory=list)
    logs_saved: bool = False


class DockerObserve(Observe):
    """How a container ended, as dockerd inspects it; its containerd-shim (and for runsc
    the sandbox and gofer below it) is counted with the instance."""

    rt: Docker

    def exit_reason(self, inst: Instance[DockerState]) -> str | None:
        cid = inst.own.container_id
        if cid is None:
            return "ended (its container is gone)"
        try:
            state = self.rt.api.inspect_container(cid)["State"]
        except Exception as exc:  # the container, or dockerd, went away
            return f"ended (dockerd cannot inspect it: {exc})"
        why = engine_exit_reason(
            state.get("Running"), state.get("ExitCode"), state.get("OOMKilled"), state.get("Error")
        )
        if why is not None:
            self.rt.save_logs(inst)  # what it printed, for the error that names how it ended
        return why

    def owner_pids(self, inst: Instance[DockerState], pid: int | None = None) -> list[int]:
        cid = inst.own.container_id
        if cid is None:
            return []
        if pid is None:
            try:
                pid = self.rt.api.inspect_container(cid)["State"]["Pid"]
            except Exception:
                return []
        return owners.supervisor_tree(pid, lambda n: n.startswith("containerd-shim"))


class DockerDaemons(RunDaemons):
    names = ("dockerd",)  # when this run started it


class Docker(Engine):
    name = "docker"
    typical_launch_s = 0.5  # start + stop here without earlier boots
    description = "Docker Engine (SDK), image imported from the artifact rootfs"
    Options = DockerOptions
    options: DockerOptions
    variants = ("runc", "crun", "runsc")
    default_variant = "runc"
    Exec = DockerExec
    Pause = DockerPause
    Snapshot = DockerSnapshot
    Daemons = DockerDaemons
    Observe = DockerObserve
    observe: DockerObserve
    State = DockerState

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.api: Any = None
        self.info: dict[str, Any] = {}  # the dockerd's, once reached
        self.placement = Placement("unknown", self.ctx.layout.parent)
        self._created: set[str] = set()  # every container id of the run, for `_revive`

    # --- availability ------------------------------------------------------------------
    @classmethod
    def available(cls, options: DockerOptions | None = None) -> Availability:
        oci = (options or DockerOptions()).oci_runtime
        if which("dockerd") is None:
            return Availability(
                False, reason="dockerd not on PATH", fix="apt-get install docker.io"
            )
        try:
            import docker  # noqa: F401
        except ImportError:
            return Availability(False, reason="Docker SDK missing", fix="make setup")
        if which(OCI_PATHS[oci]) is None:
            return Availability(False, reason=f"{oci} not on PATH", fix=f"apt-get install {oci}")
        if not daemon_up():
            version = proc.run(["dockerd", "--version"], check=False, timeout=10).stdout
            v = version.split()[2].rstrip(",") if len(version.split()) > 2 else "?"
            return Availability(True, version=f"{v} (not running: virtbench starts dockerd)")
        c = client(timeout=10)
        try:
            info = c.info()
        finally:
            c.close()
        if oci != "runc" and oci not in (info.get("Runtimes") or {}):
            return Availability(
                False,
                version=info.get("ServerVersion", "?"),
                reason=f"the running dockerd has no runtime {oci!r} registered",
                host_settings=True,
                fix=f'add "runtimes": {{"{oci}": {{"path": "{which(oci)}"}}}} to '
                "/etc/docker/daemon.json's object, then `systemctl reload docker` (dockerd "
                "reads its runtimes again on SIGHUP; virtbench never changes its settings)",
            )
        return Availability(True, version=str(info.get("ServerVersion", "?")))

    # --- the engine -------------------------------------------------------------------
    def storage_driver(self) -> str:
        """The running dockerd's storage driver (the one virtbench starts: its config's)."""
        if self.info:
            return str(self.info.get("Driver", "unknown"))
        return str(daemon_config(self.ctx.scratch)["storage-driver"])

    def conditions(self) -> dict[str, Any]:
        """The engine's, and where its containers' cgroups are (placement.py)."""
        whose = "this run's" if "dockerd" in self.ctx.daemons.started else "the host's"
        return {**super().conditions(), "cgroups": self.placement.words("dockerd", whose)}

    def _connect(self) -> None:
        config = self.ctx.scratch / "dockerd.json"
        config.write_text(json.dumps(daemon_config(self.ctx.scratch)))
        before = traces.snapshot(TRACE_MOUNTS, TRACE_DIRS, firewall=False)
        dockerd = Daemon(
            "dockerd",
            daemon_up,
            dockerd_argv(config),
            ready_timeout=90,
            after_stop=lambda: remove_engine_leftovers(before),
        )
        self.ctx.daemons.ensure(dockerd)
        self.api = client().api
        self.info = self.api.info()
        self.placement.driver = str(self.info.get("CgroupDriver", "unknown"))

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            self.placement.release(self.ctx.run_id, self.ctx.layout.roots())

    def _disconnect(self) -> None:
        if self.api is not None:
            self.api.close()
            self.api = None

    def engine_gone(self) -> str | None:
        why = self.ctx.daemons.gone("dockerd")
        if why is None and self.api is not None and not daemon_up():
            # a dockerd of the run's that was killed closes its socket before its end can
            # be seen: say how it ended rather than only that it stopped answering
            why = self.ctx.daemons.gone("dockerd", grace=1.0)
            why = why or f"dockerd no longer answers on {SOCKET}"
        return why

    def _revive(self) -> None:
        """A dockerd this run started died: start a fresh one on the same data root, so
        the run's containers, network and image it kept on disk can be removed (the
        fresh one ends the containers the dead one left). A daemon the run did not start
        is not ours to restart: what it kept stays until it is back, and the error says so."""
        if "dockerd" not in self.ctx.daemons.started:
            raise InstanceError(
                f"{self.label}: the host's dockerd is gone: this run's containers and image "
                f"stay in it until it is back; then `virtbench clean --run {self.ctx.run_id}` "
                "removes them"
            )
        self._disconnect()
        # The shims of the run's containers outlive their containerd (whose successor
        # would spend its start-up timeout on them): their containers are gone with their
        # cgroups, so they are ended first.
        shims = owners.find_by_cmdline("containerd-shim", *self._created)
        owners.end(shims + self.observe.reap + dead_containerd(), timeout=0)
        self.observe.reap = []
        CONTAINERD_PIDFILE.unlink(missing_ok=True)
        self.ctx.daemons.restart("dockerd")
        self.api = client().api
        errors = []
        for c in self.api.containers(all=True, filters={"label": self.run_label}):
            try:
                self.api.remove_container(c["Id"], force=True)
            except Exception as exc:  # keep going: the others, the network, the image
                errors.append(f"{c['Names']}: {exc}")
        if errors:
            raise InstanceError(f"{self.label}: cannot remove {len(errors)}: {errors[0]}")

    def _has_image(self, image: str) -> bool:
        try:
            self.api.inspect_image(image)
        except Exception:
            return False
        return True

    def _image_bytes(self, image: str) -> int:
        return int(self.api.inspect_image(image)["Size"])

    def _import(self, tar: bytes, tag: str) -> None:
        repo, _, version = tag.partition(":")
        self.api.import_image_from_data(
            tar, repository=repo, tag=version, changes=[f"LABEL {self.run_label}"]
        )

    def _create_network(self, name: str) -> None:
        self.api.create_network(name, driver="bridge", labels={LABEL: self.ctx.run_id})

    def _remove(self, kind: str, name: str) -> None:
        if self.api is not None:
            with contextlib.suppress(Exception):
                if kind == "network":
                    self.api.remove_network(name)
                else:
                    self.api.remove_image(name, force=True)

    # --- lifecycle ---------------------------------------------------------------------
    def _create_kwargs(self, inst: Instance) -> dict[str, Any]:
        network = self.effective_network(inst.spec.network)
        spec = inst.spec
        binds = [f"{host}:{dest}:rw" for host, dest in inst.binds]
        binds += [f"{host}:{dest}:ro" for host, dest in self.program_binds(spec)]
        host_config = self.api.create_host_config(
            network_mode=self._bridge_network() if network == "bridge" else network,
            mem_limit=spec.memory_mib * 1024 * 1024 if spec.memory_mib else None,
            cpuset_cpus=spec.cpus,
            pids_limit=spec.pids_limit,
            cgroup_parent=self.placement.cgroup_parent(spec.name),
            binds=binds or None,
            runtime=self.options.oci_runtime,
            # the profile's namespaced keys in the container's own network namespace
            sysctls=namespaced(dict(spec.sysctls)) if network != "host" and spec.sysctls else None,
        )
        return dict(
            image=self.image,
            command=list(inst.argv),
            name=spec.name,
            labels={LABEL: self.ctx.run_id, "org.virtbench.instance": spec.name},
            environment={"VIRTBENCH_INSTANCE": spec.name},
            host_config=host_config,
            detach=True,
        )

    def _prepare(self, inst: Instance[DockerState]) -> None:
        self.ctx.state.record("container", inst.name, runtime=self.label)
        self.ctx.state.record("cgroup", inst.name)
        inst.own.create = self._create_kwargs(inst)

    def _start(self, inst: Instance[DockerState], detach: bool) -> None:
        del detach  # foreground: `_wait` blocks on the container's exit
        create, inst.own.create = inst.own.create, None
        assert create is not None  # made by _prepare
        cid = self.api.create_container(**create)["Id"]
        inst.own.container_id = cid
        self._created.add(cid)
        self.api.start(cid)

    def _after_start(self, inst: Instance[DockerState]) -> None:
        info = self.api.inspect_container(self.container_id(inst))
        inst.own.shims = owners.snapshot(self.observe.owner_pids(inst, info["State"]["Pid"]))
        if self.network is not None and inst.spec.network == "bridge":
            nets = info["NetworkSettings"]["Networks"]
            inst.address = (nets.get(self.network) or {}).get("IPAddress") or None

    def _wait(self, inst: Instance[DockerState], timeout: float) -> int:
        res = self.api.wait(self.container_id(inst), timeout=timeout)
        return int(res.get("StatusCode", -1))

    def container_id(self, inst: Instance[DockerState]) -> str:
        """The id of `inst`'s container; InstanceError when it has none (any more)."""
        cid = inst.own.container_id
        if cid is None:
            raise InstanceError(f"{self.label}: {inst.name} has no container")
        return cid

    def save_logs(self, inst: Instance[DockerState]) -> None:
        """What the container printed, fetched into its log once (docker keeps it)."""
        cid = inst.own.container_id
        if cid is not None and not inst.own.logs_saved:
            with contextlib.suppress(Exception), open(inst.log_path, "ab") as log:
                log.write(self.api.logs(cid, stdout=True, stderr=True))
                inst.own.logs_saved = True

    def _after_exit(self, inst: Instance[DockerState]) -> None:
        self.save_logs(inst)

    def _stop(self, inst: Instance[DockerState]) -> None:
        self.save_logs(inst)
        cid, inst.own.container_id = inst.own.container_id, None
        shims = inst.own.shims
        if cid is not None and not shims:  # it exited before we looked: find it by id
            shims = owners.find_by_cmdline("containerd-shim", cid)
        try:
            self.api.remove_container(cid or inst.name, force=True)
        except Exception as exc:
            if "No such container" not in str(exc) and "404" not in str(exc):
                raise
        finally:  # the shim goes with its container; never leave one behind
            self.observe.reap_later(shims)

    # --- clean -------------------------------------------------------------------------
    @classmethod
    def list_objects(cls) -> list[tuple[str, str]]:
        if which("dockerd") is None or not daemon_up():
            return []
        c = client(timeout=30)
        try:
            # the low-level list: the SDK's inspects each container it lists, and one
            # removed in between (another run's, say) failed the whole listing with a 404
            found = [
                ("instance", n.lstrip("/"))
                for x in c.api.containers(all=True)
                for n in x.get("Names") or []
            ]
            found += [("orphan", name) for name in orphans(c.api)]
            found += [("network", n.name) for n in c.networks.list()]
            for img in c.images.list():
                found += [("image", t) for t in img.tags]
        finally:
            c.close()
        return found

    @classmethod
    def remove_object(cls, kind: str, name: str) -> None:
        c = client(timeout=60)
        try:
            if kind == "instance":
                c.api.remove_container(name, force=True)
            elif kind == "orphan":  # dockerd cannot remove what it did not load
                shutil.rmtree(orphans(c.api)[name])
            elif kind == "network":
                c.api.remove_network(name)
            elif kind == "image":
                c.api.remove_image(name, force=True)
        finally:
            c.close()
