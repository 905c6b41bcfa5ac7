"""`cri`: pods through the CRI, the path a Kubernetes node takes to a runtime: a pod
sandbox (its pause process, its network from CNI), then the instance's container in it,
each through containerd's CRI plugin and a shim per pod, by RuntimeClass handler
(`cri:runc`, `cri:crun`, `cri:runsc`, `cri:youki`).

The host's containerd serves the pods where it serves the CRI, ready, with the handler,
as it is configured (engines/host_cri.py); otherwise the run starts a containerd of its
own (engines/containerd.py: its own root, state, socket and handlers) and gives pods a
CNI bridge of the run's (`vb-<run>-cri`). Either way it imports the artifact rootfs as
the workload's image and as the pause image (no registry, engines/oci_image.py). Each
instance is one pod named after it (`vb-<run>-<n>`, label `org.virtbench.run`), its
cgroups under the instance's; its launch is RunPodSandbox, CreateContainer and
StartContainer, each one crictl call; stopping is StopPodSandbox and RemovePodSandbox.
The shim (and for runsc the sandbox and gofer below it) is counted with the instance.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from virtbench.errors import InstanceError
from virtbench.host import cgroups, proc
from virtbench.runtimes import owners
from virtbench.runtimes.base import (
    Availability,
    Family,
    Instance,
    Runtime,
    remove_tree,
    which,
)
from virtbench.runtimes.daemon import Daemon
from virtbench.runtimes.engines import containerd, host_cri
from virtbench.runtimes.engines.base import LABEL
from virtbench.runtimes.engines.cri_controls import CriExec, CriMemory, CriObserve
from virtbench.runtimes.engines.cri_pod import CriState, container_config, monotonic_of, pod_config
from virtbench.runtimes.engines.crictl import BINARY, Crictl, write_config
from virtbench.runtimes.engines.oci_image import layout_tar
from virtbench.runtimes.engines.placement import Placement
from virtbench.runtimes.network import free_subnet
from virtbench.runtimes.observe import RunDaemons
from virtbench.runtimes.tarball import tar_of

DAEMON = "containerd-cri"


class CriOptions(BaseModel):
    """The RuntimeClass handler pods run with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # runc, crun, runsc, youki; or any other handler the host's containerd has (kata)
    handler: str = Field(default="runc", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class CriDaemons(RunDaemons):
    names = (DAEMON,)


class Cri(Runtime):
    name = "cri"
    family = Family.CONTAINER
    description = "pods through the CRI (containerd), by RuntimeClass handler"
    typical_launch_s = 0.6
    networks = ("bridge", "host")
    Options = CriOptions
    options: CriOptions
    variant_option = "handler"
    variants = containerd.HANDLERS
    default_variant = "runc"
    virtbench_bridge = False
    Observe = CriObserve
    observe: CriObserve
    Daemons = CriDaemons
    Exec = CriExec
    Memory = CriMemory
    State = CriState

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rid = self.ctx.run_id
        self.where = containerd.Layout(
            root=self.ctx.paths.data_dir(rid) / "containerd",
            state=self.ctx.scratch / "cri",
            cni=self.ctx.scratch / "cri" / "cni",
        )
        self.host, self.host_unused = _host_for(self.options.handler)
        on = "host" if self.host is not None else "own"  # a run may hold pods of both
        self.crictl = Crictl(self.where.state / f"crictl-{on}.yaml")
        self.image = f"localhost/vb-{rid}-rootfs:1"
        self.pause_image = f"localhost/vb-{rid}-pause:1"
        self.bridge = f"vb-{rid}-cri"
        self.placement = Placement("cgroupfs", self.ctx.layout.parent)

    def effective_network(self, requested: str) -> str:
        """A pod always has a network of its own: "none" is the pod network (the run's
        bridge), as a Kubernetes pod has, and so recorded with every sample."""
        return super().effective_network("bridge" if requested == "none" else requested)

    # --- availability ------------------------------------------------------------------
    @classmethod
    def available(cls, options: CriOptions | None = None) -> Availability:
        handler = (options or CriOptions()).handler
        if which(BINARY) is None:
            return Availability(False, reason=f"{BINARY} not on PATH", fix="make cri")
        host, unused = _host_for(handler)
        if host is not None:
            return Availability(
                True, version=f"containerd {host.version} (the host's, as configured)"
            )
        own = _own_available(handler)
        if not unused:
            return own
        if own.ok:
            return replace(own, version=f"{own.version}: the host's is not used, {unused}")
        return replace(own, reason=f"{own.reason}; the host's containerd: {unused}")

    def conditions(self) -> dict[str, Any]:
        if self.host is not None:
            whose, engine = "the host's", f"the host's, as configured ({self.host.socket})"
        else:
            whose, engine = (
                "this run's",
                "this run's own"
                + (f" (the host's is not used: {self.host_unused})" if self.host_unused else ""),
            )
        return {
            "rootfs": "overlay (containerd's overlayfs snapshotter, on disk)",
            "security": "engine-default (the CRI's defaults: no seccomp profile unless a pod asks)",
            "cgroups": self.placement.words("containerd", whose),
            "containerd": engine,
        }

    @classmethod
    def host_variants(cls) -> tuple[str, ...]:
        """The handlers of the host's containerd, where it serves the CRI (kata...)."""
        host = host_cri.find()
        return tuple(host.handlers) if host is not None and not host.problem else ()

    @classmethod
    def list_objects(cls) -> list[tuple[str, str]]:
        """The host's containerd's pods and images (a run's own containerd goes with
        its directories and label)."""
        return host_cri.list_objects()

    @classmethod
    def remove_object(cls, kind: str, name: str) -> None:
        host_cri.remove_object(kind, name)

    # --- the engine ---------------------------------------------------------------------
    @property
    def socket(self) -> Path:
        """The CRI socket of the containerd its pods run in."""
        return self.host.socket if self.host is not None else self.where.socket

    def _setup(self) -> None:
        self.where.state.mkdir(parents=True, exist_ok=True)
        if self.host is None:
            self._own()
        else:
            write_config(self.crictl.config, self.host.socket)
        self._import({self.image: "rootfs", self.pause_image: "pause"})

    def _own(self) -> None:
        """The run's own containerd, with every handler this host can run, and its
        pods' network."""
        w = self.where
        for d in (w.root, w.state, w.cni):
            d.mkdir(parents=True, exist_ok=True)
        self._network()
        handlers = [h for h in containerd.HANDLERS if containerd.handler_problem(h) is None]
        w.config.write_text(containerd.config_toml(w, handlers, self.pause_image))
        (w.state / "runsc.toml").write_text(containerd.RUNSC_TOML)
        write_config(self.crictl.config, w.socket)
        # labelled: a crash leaves it, and the shims it spawns, to `clean` by their label
        env = {**os.environ, "VIRTBENCH_INSTANCE": f"vb-{self.ctx.run_id}-containerd"}
        argv = [which("containerd") or "containerd", "--config", str(w.config)]
        daemon = Daemon(
            DAEMON,
            self.crictl.answers,
            argv,
            ready_timeout=90,
            env=env,
            after_stop=self._remove_root,
        )
        self.ctx.daemons.ensure(daemon)

    def _network(self) -> None:
        """The pods' bridge, made now with its gateway address so that no other run takes
        its subnet, and the CNI configuration that puts pods on it."""
        if (self.where.cni / "10-virtbench.conflist").exists():
            return
        subnet = free_subnet()
        self.ctx.state.record("link", self.bridge, subnet=str(subnet))
        gateway = f"{next(subnet.hosts())}/{subnet.prefixlen}"
        for argv in (
            ["ip", "link", "add", self.bridge, "type", "bridge"],
            ["ip", "addr", "add", gateway, "dev", self.bridge],
            ["ip", "link", "set", self.bridge, "up"],
        ):
            proc.run(argv, timeout=30)
        conf = containerd.cni_conflist(
            self.bridge, self.bridge, str(subnet), self.where.cni / "leases"
        )
        (self.where.cni / "10-virtbench.conflist").write_text(conf)

    def _import(self, images: dict[str, str]) -> None:
        """The artifact rootfs as each image (name -> role) the CRI's namespace lacks (a
        run's other `cri` variant may have imported them), its layer made once."""
        known = {
            t
            for img in self.crictl.json("images").get("images") or []
            for t in img.get("repoTags") or []
        }
        missing = {name: role for name, role in images.items() if name not in known}
        if not missing:
            return
        if self.ctx.rootfs is None:
            raise InstanceError(f"{self.label}: no artifact rootfs to import")
        layer = tar_of(self.ctx.rootfs)
        ctr = [which("ctr") or "ctr", "-a", str(self.socket), "-n", containerd.NAMESPACE]
        for name, role in missing.items():
            self.ctx.state.record("image", name, runtime=self.label)
            labels = {LABEL: self.ctx.run_id, "org.virtbench.role": role}
            tar = self.where.state / f"{role}.tar"
            tar.write_bytes(layout_tar(layer, name, ["/bin/vb-sleep"], labels))
            res = proc.run([*ctr, "images", "import", str(tar)], check=False, timeout=300)
            tar.unlink(missing_ok=True)
            if res.returncode != 0:
                raise InstanceError(f"{self.label}: importing {name}: {res.brief()}")

    def _remove_root(self) -> None:
        """After the run's containerd stopped: its images and snapshots on disk, then the
        run's data directory if that leaves it empty."""
        remove_tree(self.where.root)
        with contextlib.suppress(OSError):
            self.where.root.parent.rmdir()

    def image_size(self) -> tuple[int, str] | None:
        for img in self.crictl.json("images").get("images") or []:
            if self.image in (img.get("repoTags") or []):
                return int(img.get("size", 0)), "containerd image size"
        return None

    def _close(self) -> None:
        # the own daemon goes with the run's others (ctx.daemons), its images with its
        # root; its pods are gone by now. The host's keeps nothing of the run's.
        if self.host is None:
            proc.run(["ip", "link", "delete", self.bridge], check=False, timeout=30)
            return
        for image in (self.image, self.pause_image):  # a variant closed before took them
            with contextlib.suppress(InstanceError):
                self.crictl.call("rmi", image)

    # --- lifecycle ------------------------------------------------------------------------
    def _prepare(self, inst: Instance[CriState]) -> None:
        """The pod's files, and its cgroup with the pod's limits, as a kubelet makes a
        pod's (the CRI takes no pids limit: a node sets it on the pod's cgroup)."""
        spec = inst.spec
        self.ctx.state.record("container", inst.name, runtime=self.label)
        self.ctx.state.record("cgroup", inst.name)
        memory = spec.memory_mib * 1024 * 1024 if spec.memory_mib else None
        cgroups.create(self.ctx.layout, inst.name, memory, spec.cpus, spec.pids_limit)
        d = self.where.state / "pods" / inst.name
        (d / "logs").mkdir(parents=True, exist_ok=True)
        network = self.effective_network(inst.spec.network)
        rid, parent = self.ctx.run_id, self.placement.cgroup_parent(inst.name)
        pod = pod_config(rid, parent, inst, network, d / "logs")
        ctr = container_config(rid, self.image, inst)
        inst.own.pod_config, inst.own.container_config = d / "pod.json", d / "container.json"
        inst.own.pod_config.write_text(json.dumps(pod))
        inst.own.container_config.write_text(json.dumps(ctr))

    def _start(self, inst: Instance[CriState], detach: bool) -> None:
        del detach  # foreground: `_wait` waits for the container's exit
        pod, ctr = str(inst.own.pod_config), str(inst.own.container_config)
        inst.own.pod_id = self.crictl.call("runp", "--runtime", self.options.handler, pod)
        inst.phases.append(("pod_sandbox", time.monotonic_ns()))
        inst.own.container_id = self.crictl.call("create", inst.own.pod_id, ctr, pod)
        inst.phases.append(("container_create", time.monotonic_ns()))
        self.crictl.call("start", inst.own.container_id)
        inst.phases.append(("container_start", time.monotonic_ns()))

    def _after_start(self, inst: Instance[CriState]) -> None:
        pid = self.container_pid(inst)
        inst.own.shims = owners.snapshot(self.observe.owner_pids(inst, pid))
        if self.effective_network(inst.spec.network) == "bridge" and inst.own.pod_id:
            status = self.crictl.json("inspectp", inst.own.pod_id)["status"]
            inst.address = (status.get("network") or {}).get("ip") or None

    def container_pid(self, inst: Instance[CriState]) -> int | None:
        """The host pid of the instance's container process (None: gone)."""
        if inst.own.container_id is None:
            return None
        with contextlib.suppress(InstanceError, KeyError, TypeError):
            pid = self.crictl.json("inspect", inst.own.container_id)["info"]["pid"]
            return int(pid) or None
        return None

    def _wait(self, inst: Instance[CriState], timeout: float) -> int:
        """Polls the container's state every 5 ms; its exit time is the one its shim
        reported (the host's clock, carried over to the monotonic one)."""
        cid = inst.own.container_id
        if cid is None:
            raise InstanceError(f"{self.label}: {inst.name} has no container")
        deadline = time.monotonic() + timeout
        while True:
            status = self.crictl.json("inspect", cid)["status"]
            if status.get("state") == "CONTAINER_EXITED":
                inst.t_exit_ns = monotonic_of(status.get("finishedAt"))
                return int(status.get("exitCode", -1))
            if time.monotonic() > deadline:
                raise TimeoutError(f"{inst.name} still running after {timeout:g} s")
            time.sleep(0.005)

    def _after_exit(self, inst: Instance[CriState]) -> None:
        self.save_logs(inst)

    def save_logs(self, inst: Instance[CriState]) -> None:
        """What the container printed, into the instance's log once (the CRI's log
        lines, `<time> <stream> <tag> <text>`, as their text)."""
        if inst.own.logs_saved or inst.own.pod_config is None:
            return
        source = inst.own.pod_config.parent / "logs" / "main.log"
        with contextlib.suppress(OSError):
            lines = source.read_text(errors="replace").splitlines()
            text = "".join(ln.split(" ", 3)[3] + "\n" for ln in lines if ln.count(" ") >= 3)
            with open(inst.log_path, "a") as log:
                log.write(text)
            inst.own.logs_saved = True

    def _stop(self, inst: Instance[CriState]) -> None:
        self.save_logs(inst)
        pod, inst.own.pod_id = inst.own.pod_id, None
        inst.own.container_id = None
        shims = inst.own.shims or (owners.find_by_cmdline("containerd-shim", pod) if pod else [])
        try:
            if pod is not None:
                self.crictl.call("stopp", pod)
                self.crictl.call("rmp", pod)
        finally:  # the shim goes with its pod; never leave one behind
            self.observe.reap_later(shims)


def _host_for(handler: str) -> tuple[host_cri.HostCri | None, str]:
    """(the host's containerd, where it serves `handler`'s pods; why it does not, where
    there is one that does not: "" where there is none)."""
    host = host_cri.find()
    if host is None:
        return None, ""
    why = host_cri.handler_problem(host, handler)
    return (host, "") if why is None else (None, why)


def _own_available(handler: str) -> Availability:
    """Whether the containerd a run starts can serve `handler`'s pods here."""
    if which("containerd") is None:
        return Availability(
            False, reason="containerd not on PATH", fix="apt-get install containerd"
        )
    problem = containerd.handler_problem(handler)
    if problem is not None:
        why, fix, host = problem
        return Availability(False, reason=why, fix=fix, host_settings=host)
    res = proc.run(["containerd", "--version"], check=False, timeout=10)
    words = res.stdout.split()
    version = words[2] if len(words) > 2 else "?"
    return Availability(True, version=f"containerd {version} (virtbench starts its own)")
