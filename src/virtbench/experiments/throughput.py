"""`throughput`: a server in the instance, a client on the host, figures from the client.

For each repetition, runtime (rotated as in boot) and serving workload: start a fresh
instance running the server, wait until its TCP port accepts connections, run the
workload's client once per level of its swept parameter (e.g. wrk's connections), parse
the client's output and store every figure, then stop the instance. Clients run on the
host, outside the instance's cgroup, and talk to the instance over the host network or
the run's bridge (never anything else); `none` cannot be reached, so it is an error.
"""

from __future__ import annotations

import shutil
import socket
import time
from pathlib import Path
from typing import Any

from virtbench import proc, workloads
from virtbench.errors import InstanceError, SpecError
from virtbench.experiments.session import Failures, Session
from virtbench.proc import CommandError
from virtbench.runtimes.base import Instance
from virtbench.spec import ThroughputExperiment
from virtbench.store import Sample


def port_open(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1.0):
            return True
    except OSError:
        return False


def wait_tcp(inst: Instance, address: str, port: int, timeout: float) -> None:
    """Until `address:port` accepts a connection; raise if the server exits or is slow."""
    deadline = time.monotonic() + timeout
    while not port_open(address, port):
        if inst.proc is not None and inst.proc.poll() is not None:
            raise InstanceError(f"server exited ({inst.proc.returncode}): {inst.log_tail()}")
        if time.monotonic() > deadline:
            raise InstanceError(f"port {port} not open after {timeout:g} s: {inst.log_tail()}")
        time.sleep(0.05)


def client_argv(artifact: Path, argv: list[str]) -> list[str]:
    """A client command as run on the host: a client that is one of the artifact's own
    static programs (`/bin/vb-rr`) runs from the artifact."""
    if argv[0].startswith("/bin/vb-"):
        return [str(artifact / argv[0].lstrip("/")), *argv[1:]]
    return argv


def check(s: Session, cfg: ThroughputExperiment) -> None:
    """Before any measurement: clients installed, every server reachable from the host."""
    for name in cfg.workloads:
        wl = workloads.get(name)
        if wl.ENDS != "serve":
            continue
        for client in (wl.CLIENT, *getattr(wl, "EXTRA_CLIENTS", ())):
            if shutil.which(client_argv(s.artifact.path, [client])[0]) is None:
                raise SpecError(f"throughput: {name} needs {client} on the host (make setup)")
        for runtime in s.spec.runtimes:
            network = s.runtimes[runtime].effective_network(s.spec.instance_for(runtime).network)
            if network == "none":
                raise SpecError(
                    f"throughput: {runtime} has network none, so the host's {wl.CLIENT} cannot "
                    f'reach {name}: set [instance] network = "bridge" or "host" '
                    f"(or in [runtime.{runtime}])"
                )


def prepare_server(
    wl: Any, params: Any, inst: Instance, address: str, ready_timeout: float, timeout: float
) -> None:
    """Untimed, once per server instance after its port opened: wait until the workload's
    readiness check passes (a database still starting accepts connections and refuses
    queries), then run its client-side preparation (create and fill tables)."""
    artifact = inst.spec.rootfs
    if hasattr(wl, "ready"):
        argv = client_argv(artifact, wl.ready(address, params))
        deadline = time.monotonic() + ready_timeout
        while (res := proc.run(argv, check=False, timeout=30)).returncode != 0:
            if inst.proc is not None and inst.proc.poll() is not None:
                raise InstanceError(f"server exited ({inst.proc.returncode}): {inst.log_tail()}")
            if time.monotonic() > deadline:
                raise InstanceError(f"{wl.NAME} not ready after {ready_timeout:g} s: {res.brief()}")
            time.sleep(0.2)
    for argv in wl.prepare(address, params) if hasattr(wl, "prepare") else []:
        try:
            res = proc.run(client_argv(artifact, argv), check=False, timeout=timeout)
        except CommandError as exc:  # timed out
            raise InstanceError(f"{wl.NAME} preparation: {exc}") from None
        if res.returncode != 0:
            raise InstanceError(f"{wl.NAME} preparation ({argv[0]}) failed: {res.brief()}")


def _inside(
    s: Session, cfg: ThroughputExperiment, runtime: str, wl: Any, params: Any, level: Any
) -> list[workloads.Metric]:
    """Run a measuring program to its exit in a fresh instance; parse what it printed."""
    rt = s.runtimes[runtime]
    spec = s.instance_spec(
        runtime, lambda _name: wl.command(params, level), data=getattr(wl, "DATA", False)
    )
    inst = rt.run_to_exit(spec, cfg.client_timeout_s)
    try:
        if inst.exit_code != 0:
            raise InstanceError(f"{wl.NAME} exited {inst.exit_code}: {inst.log_tail()}")
        try:
            return wl.parse(inst.log_path.read_text(errors="replace"))
        except workloads.ParseError as exc:
            raise InstanceError(f"{wl.NAME}: {exc}") from None
    finally:
        rt.stop(inst)


def measure(
    s: Session, cfg: ThroughputExperiment, runtime: str, name: str, rep: int, warmup: bool
) -> None:
    wl = workloads.get(name)
    params = cfg.params_for(name)
    rt = s.runtimes[runtime]
    base_params = {**s.params(runtime), **params.model_dump(mode="json")}
    levels = wl.levels(params) if hasattr(wl, "levels") else [None]
    levels_done: list[Any] = []

    def record(metric: str, value: float | None, unit: str, direction: str, level: Any,
               error: str = "") -> None:  # fmt: skip
        if hasattr(wl, "label"):
            suffix = wl.label(params, level)
        else:
            suffix = f"@{level}" if len(levels) > 1 else ""
        s.record(
            Sample(
                experiment="throughput",
                metric=f"{metric}{suffix}",
                value=value,
                unit=unit,
                direction=direction,
                runtime=runtime,
                workload=name,
                repetition=rep,
                warmup=warmup,
                params={**base_params, **({"level": level} if level is not None else {})},
                error=error,
            )
        )

    if wl.ENDS == "exit":  # runs inside the instance and prints its own figures
        for level in levels:  # a fresh instance per level
            try:
                metrics = _inside(s, cfg, runtime, wl, params, level)
            except InstanceError as exc:
                unit, direction = wl.PRIMARY_UNIT, wl.PRIMARY_DIRECTION
                record(wl.PRIMARY, None, unit, direction, level, error=str(exc))
                raise
            for m in metrics:
                record(m.name, m.value, m.unit, m.direction, level)
        return
    network = rt.effective_network(s.spec.instance_for(runtime).network)
    if network == "host" and port_open("127.0.0.1", wl.PORT):  # we would measure it instead
        err = f"port {wl.PORT} on the host is already in use by another process: stop it"
        record(wl.PRIMARY, None, wl.PRIMARY_UNIT, wl.PRIMARY_DIRECTION, levels[0], error=err)
        raise InstanceError(f"{name} on {runtime}: {err}")
    inst = None
    try:
        spec = s.instance_spec(runtime, wl.argv, data=getattr(wl, "DATA", False))
        inst = rt.start(spec, detach=True)
        address = inst.address or "127.0.0.1"
        wait_tcp(inst, address, wl.PORT, cfg.ready_timeout_s)
        prepare_server(wl, params, inst, address, cfg.ready_timeout_s, cfg.client_timeout_s)
        for level in levels:
            try:
                argv = client_argv(s.artifact.path, wl.client(address, params, level))
                res = proc.run(argv, check=False, timeout=cfg.client_timeout_s)
            except CommandError as exc:  # timed out
                raise InstanceError(f"{name} client at level {level}: {exc}") from None
            try:
                metrics = wl.parse(res.stdout + res.stderr)
            except workloads.ParseError as exc:
                raise InstanceError(f"{name} client at level {level}: {exc}") from None
            for m in metrics:
                record(m.name, m.value, m.unit, m.direction, level)
            levels_done.append(level)
    except InstanceError as exc:  # stored with its reason: counted, never averaged
        failed = next((lv for lv in levels if lv not in levels_done), levels[0])
        record(wl.PRIMARY, None, wl.PRIMARY_UNIT, wl.PRIMARY_DIRECTION, failed, error=str(exc))
        raise
    finally:
        if inst is not None:
            rt.stop(inst)


def run(s: Session, cfg: ThroughputExperiment) -> None:
    check(s, cfg)
    failures = Failures(s, "throughput")
    for rep, warmup, order in s.schedule(cfg.warmups, cfg.runs):
        for runtime in order:
            for name in cfg.workloads:
                if failures.skip(runtime):
                    break
                kind = "warm-up" if warmup else "run"
                s.say(f"throughput: {name} on {runtime} ({kind} {rep + 1})")
                try:
                    measure(s, cfg, runtime, name, rep, warmup)
                    failures.ok(runtime)
                except InstanceError as exc:
                    s.event("warning", f"throughput: {runtime} {name}: {exc}")
                    failures.failed(runtime, exc)
