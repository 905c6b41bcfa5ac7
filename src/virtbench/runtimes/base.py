"""The Runtime protocol: a small driver lifecycle with the bookkeeping in the base class,
and the capability objects a driver declares.

A driver fills in `_start` (launch, detached or foreground), `_wait` and `_stop`, and
optionally `_setup` (once per run, untimed: start a daemon, import an image) and
`_close` (undo `_setup`). The public `start`/`run_to_exit`/`stop` own timing, the run's
ledger, the ready-probe address, bridge networking, cgroup removal and idempotency. Every
instance a Runtime started is tracked until stopped, and `close` (from the run's
`finally:`) stops them all and then undoes the set-up. `virtbench clean` asks the class
(`list_objects`, `remove_object`) what the runtime's own registry holds.

The rest is composed, not inherited: a driver declares the class it uses for `Exec`,
`Pause` and `Snapshot` (controls.py: default no exec, the cgroup freezer, no checkpoint),
`Memory`, `Daemons` and `Observe` (observe.py: what is attributed to an instance, the
run's daemons, its processes and ready signal) and `Attach` (attach.py: bridge, data,
probe address); `__init__` makes one of each (`rt.exec`, `rt.pause`, ...) holding the
driver. A capability a runtime lacks says why in one line (`problem()`). Its spec options
are a pydantic model `Options`; `variant_option` is the one a label such as `docker:crun`
sets.

Timeline of one instance (host monotonic clock, ns):
  (prepare)  untimed: bundle files, cgroups, network namespace
  t_spawn   the launch call is issued (just before fork/exec of the launcher: a driver
            whose launch is one command stamps it again once that command is built)
  t_started the launcher returned (detached) -- the instance exists
  ready     the in-instance probe's datagram arrived (measured by the probe listener)
  exit      the instance's main process exited (foreground runs)
  teardown  the stop call took this long
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from pydantic import BaseModel

from virtbench.errors import EngineGone, InstanceError, SpecError
from virtbench.host import cgroups, proc
from virtbench.runtimes import attach, controls, launcher, observe
from virtbench.runtimes.model import (  # re-exported: drivers import them from here
    DATA_MOUNT,
    PROBE_MOUNT,
    PROBE_PLACEHOLDER,
    Availability,
    Family,
    Instance,
    InstanceSpec,
    NoOptions,
    RuntimeContext,
    remove_tree,
    which,
)

if TYPE_CHECKING:
    import threading

__all__ = [
    "DATA_MOUNT",
    "PROBE_MOUNT",
    "PROBE_PLACEHOLDER",
    "Availability",
    "Family",
    "Instance",
    "InstanceSpec",
    "NoOptions",
    "Runtime",
    "RuntimeContext",
    "remove_tree",
    "which",
]


class Runtime(ABC):
    """Base class of every runtime driver."""

    # Its launch is one launcher command (launcher.py) or a spawn that returns at once: a
    # burst issues its launches back to back from one thread (`spawn_launch`), then waits
    # for each in a thread of its own (`finish_launch`), as `xargs -P` would.
    spawns_launcher: ClassVar[bool] = False
    name: ClassVar[str]
    family: ClassVar[Family]
    description: ClassVar[str] = ""
    typical_launch_s: ClassVar[float] = 1.0  # start + stop, s: the estimate with no boot here
    networks: ClassVar[tuple[str, ...]] = ("none", "host", "bridge")
    Options: ClassVar[type[BaseModel]] = NoOptions
    # False: the driver's engine makes its own bridge network (docker, podman), so no
    # virtbench bridge/netns is attached and the probe goes through the unix socket.
    virtbench_bridge: ClassVar[bool] = True
    variant_option: ClassVar[str | None] = None  # the option a `name:variant` label sets
    variants: ClassVar[tuple[str, ...]] = ()
    default_variant: ClassVar[str | None] = None

    # the classes of its capabilities and helpers, made once per driver (see the module doc)
    Exec: ClassVar[type[controls.Exec]] = controls.Exec
    Pause: ClassVar[type[controls.Pause]] = controls.CgroupFreezer
    Snapshot: ClassVar[type[controls.Snapshot]] = controls.Snapshot
    Memory: ClassVar[type[observe.Memory]] = observe.Memory
    Daemons: ClassVar[type[observe.RunDaemons]] = observe.RunDaemons
    Observe: ClassVar[type[observe.Observe]] = observe.Observe
    Attach: ClassVar[type[attach.Attach]] = attach.Attach

    def __init__(
        self, ctx: RuntimeContext, options: BaseModel | None = None, label: str | None = None
    ) -> None:
        self.ctx = ctx
        self.options = options if options is not None else self.Options()
        self.label = label or self.name
        self.instances: dict[str, Instance] = {}
        self._set_up = False
        # Why its engine cannot be used (its daemon died mid-run): every start then fails at
        # once, and `close` revives the engine to clean up.
        self.dead: str | None = None
        self.exec = self.Exec(self)
        self.pause = self.Pause(self)
        self.snapshot = self.Snapshot(self)
        self.memory = self.Memory(self)
        self.daemons = self.Daemons(self)
        self.observe = self.Observe(self)
        self.attach = self.Attach(self)

    # --- what drivers provide -------------------------------------------------------
    @classmethod
    @abstractmethod
    def available(cls, options: BaseModel | None = None) -> Availability:
        """Can this runtime (with these options) run here? Never raises."""

    @classmethod
    def cannot_run(cls, workload: str, options: BaseModel | None = None) -> str | None:
        """Why this runtime (with these options) cannot run `workload` (None: it can)."""
        del workload, options
        return None

    def _setup(self) -> None:  # noqa: B027 (optional: default nothing)
        """Untimed, once per run: start a daemon, import an image (ledger first)."""

    def _after_start(self, inst: Instance) -> None:  # noqa: B027 (optional: default nothing)
        """Untimed, right after the launch returned (e.g. look up the address)."""

    def _after_exit(self, inst: Instance) -> None:  # noqa: B027 (optional: default nothing)
        """Untimed, after a foreground instance exited (e.g. fetch its output)."""

    def _close(self) -> None:  # noqa: B027 (optional: default nothing)
        """Undo `_setup` (remove images, networks; stop a daemon this run started)."""

    def engine_gone(self) -> str | None:
        """Why its engine (the daemon its instances go through: dockerd, LXD) died or stopped
        answering, or None. Asked only after a failure. Default: None."""
        return None

    def _revive(self) -> None:  # noqa: B027 (optional: default nothing)
        """After the engine died: bring it back (a fresh daemon) so that `close` can
        remove what the run made through it. Default: nothing to revive."""

    def serve_port(self, workload: str) -> int | None:
        """The port an instance serves `workload` on when not the workload's own (an image
        built elsewhere); None: the workload's PORT."""
        return None

    def _prepare(self, inst: Instance) -> None:  # noqa: B027 (optional: default nothing)
        """Untimed, before the launch call: bundle files, cgroups (recorded in the ledger)."""

    @abstractmethod
    def _start(self, inst: Instance, detach: bool) -> None:
        """Launch `inst` (timed). Detached: return once it exists. Foreground: set `inst.proc`."""

    @abstractmethod
    def _stop(self, inst: Instance) -> None:
        """Stop and delete `inst`; must tolerate an instance that already exited."""

    def _wait(self, inst: Instance, timeout: float) -> int:
        """A foreground instance's exit status, once it exited (may set `t_exit_ns`)."""
        assert inst.proc is not None
        return proc.wait(inst.proc, timeout)

    def image_size(self) -> tuple[int, str] | None:
        """(bytes, how measured) of what it keeps on disk to start the run's artifact.
        Default: the artifact rootfs as du counts it. Call after `setup`."""
        if self.ctx.rootfs is None:
            return None
        from virtbench.artifacts.rootfs import disk_usage

        return disk_usage(self.ctx.rootfs)[0], "rootfs du"

    def cgroup_names(self, inst: Instance) -> list[str]:
        """The instance's cgroups under `virtbench/` (counted, and removed by `stop`).
        Default: the one named after it; LXC adds its monitor's."""
        return [inst.name]

    @property
    def emulated(self) -> bool:
        """True when instances run under emulation (QEMU TCG): functional results only,
        and every sample says so."""
        return False

    def applies_pids_limit(self) -> bool:
        """Whether an InstanceSpec's pids_limit is enforced (recorded as None if not)."""
        return True

    def conditions(self) -> dict[str, Any]:
        """How it runs instances, beyond the instance options, recorded with every sample
        (a VM's firmware). Default: nothing more."""
        return {}

    # --- the public lifecycle -----------------------------------------------------------
    def effective_network(self, requested: str) -> str:
        """The network the instance will really have (recorded with every sample)."""
        if requested not in self.networks:
            if self.family is Family.PROCESS:
                return "host"
            raise SpecError(
                f"runtime {self.label}: network {requested!r} not supported "
                f"(allowed: {', '.join(self.networks)})"
            )
        return requested

    def _begin(self, spec: InstanceSpec) -> Instance:
        """Everything before the launch: ledger, log, probe address, network."""
        if spec.name in self.instances:
            raise InstanceError(f"instance {spec.name} already started")
        network = self.effective_network(spec.network)
        self.setup()
        self.ctx.state.record("instance", spec.name, runtime=self.label)
        log_dir = self.ctx.scratch / "logs"
        log_dir.mkdir(exist_ok=True)
        inst = Instance(spec=spec, runtime=self.label, log_path=log_dir / f"{spec.name}.log")
        self.instances[spec.name] = inst
        self.attach.prepare(inst, network)
        return inst

    def check_engine(self) -> None:
        """After a failure: raise EngineGone if the runtime's engine died (remembered, so
        every later start fails at once with the same reason)."""
        if self.dead is None:
            self.dead = self.engine_gone()
        if self.dead is not None:
            raise EngineGone(f"{self.label}: {self.dead}")

    def start(self, spec: InstanceSpec, detach: bool = True) -> Instance:
        """Start an instance. The ledger records it before anything is created."""
        inst = self.prepare(spec)
        self.launch(inst, detach)
        return inst

    def prepare(self, spec: InstanceSpec) -> Instance:
        """Everything before the launch call, untimed: ledger, log, network, bundle."""
        if self.dead is not None:
            raise EngineGone(f"{self.label}: {self.dead}")
        inst = self._begin(spec)
        try:
            self._prepare(inst)
        except BaseException as exc:
            self._start_failed(inst, exc)
        return inst

    def launch(self, inst: Instance, detach: bool = True) -> None:
        """The launch call of a prepared instance, timed (t_spawn_ns, t_started_ns). Safe
        to call from several threads at once for different instances (a burst)."""
        try:
            inst.t_spawn_ns = time.monotonic_ns()
            self._start(inst, detach)
            inst.t_started_ns = time.monotonic_ns()
            self._after_start(inst)
        except BaseException as exc:
            self._start_failed(inst, exc)

    def spawn_launch(self, inst: Instance) -> None:
        """A burst's first half of `launch` (detached): the launch call issued, timed
        (t_spawn_ns), its launcher command not waited for where the driver has one
        (`spawns_launcher`), so that one thread can issue many launches back to back."""
        inst.extra["defer_launch"] = True
        try:
            inst.t_spawn_ns = time.monotonic_ns()
            self._start(inst, True)
        except BaseException as exc:
            self._start_failed(inst, exc)
        finally:
            inst.extra.pop("defer_launch", None)

    def finish_launch(self, inst: Instance) -> None:
        """The second half: the launcher waited for (t_started_ns), then as `launch`."""
        try:
            pending = inst.extra.pop("pending_launch", None)
            if pending is not None:
                launcher.await_launch(inst, *pending)
            inst.t_started_ns = time.monotonic_ns()
            self._after_start(inst)
        except BaseException as exc:
            self._start_failed(inst, exc)

    def wait_ready(
        self, inst: Instance, timeout: float, abort: threading.Event | None = None
    ) -> int:
        """Host monotonic ns of `inst`'s ready datagram (`observe.wait_ready`)."""
        return self.observe.wait_ready(inst, timeout, abort)

    def settled(self) -> bool:
        """Whether what lingers after its removals has gone (`observe.settled`)."""
        return self.observe.settled()

    def _start_failed(self, inst: Instance, exc: BaseException) -> NoReturn:
        """Ctrl-C or a driver error while starting: clean up, but never let a clean-up
        error hide the original one (the run's teardown sweeps anything left by label)."""
        with contextlib.suppress(Exception):
            self.stop(inst)
        if not isinstance(exc, Exception) or isinstance(exc, InstanceError):
            raise exc
        self.check_engine()
        if isinstance(exc, OSError):  # e.g. a cpuset the host does not have
            raise InstanceError(f"{self.label}: cannot start {inst.name}: {exc}") from None
        raise exc

    def run_to_exit(self, spec: InstanceSpec, timeout: float) -> Instance:
        """Start in the foreground and wait for the main process to exit."""
        inst = self.start(spec, detach=False)
        try:
            inst.exit_code = self._wait(inst, timeout)
        except Exception as exc:
            with contextlib.suppress(Exception):  # never hide why: the teardown sweeps
                self.stop(inst)
            if isinstance(exc, InstanceError):
                raise
            self.check_engine()
            raise launcher.wait_failed(f"{self.label}: {spec.name}", exc, timeout) from exc
        if inst.t_exit_ns is None:  # `_wait` may know the exit time better (LXD)
            inst.t_exit_ns = time.monotonic_ns()
        self._after_exit(inst)
        return inst

    def stop(self, inst: Instance) -> float:
        """Stop and remove everything of `inst`; return seconds taken. Idempotent."""
        if inst.stopped:
            return 0.0
        t0 = time.monotonic()
        if inst.extra.get("paused"):  # thawed first: some runtimes cannot delete it frozen
            with contextlib.suppress(Exception):
                self.pause.resume(inst)
        try:
            self._stop(inst)
        except Exception:
            # With its engine gone, the instance cannot be removed through it: its
            # processes go with its cgroups below, and `close` removes what the engine
            # kept once it is revived.
            if self.dead is None:
                self.dead = self.engine_gone()
            if self.dead is None:
                raise
        finally:
            inst.stopped = True
            for name in self.cgroup_names(inst):
                for d in self.ctx.layout.dirs(name):
                    cgroups.kill_and_remove(d)
            self.attach.release(inst)
            self.instances.pop(inst.name, None)
        return time.monotonic() - t0

    def stop_each(self, instances: list[Instance]) -> list[str]:
        """Stop every one of `instances`, going on past failures; the failures' messages."""
        errors = []
        for inst in instances:
            try:
                self.stop(inst)
            except Exception as exc:  # keep stopping the others
                errors.append(f"{inst.name}: {exc}")
        return errors

    def stop_all(self) -> None:
        """Stop every instance this driver still has (used from `finally:`)."""
        errors = self.stop_each(list(self.instances.values()))
        if errors:
            raise InstanceError(f"{self.label}: could not stop {len(errors)}: {errors[0]}")

    def setup(self) -> None:
        """Run `_setup` once (the first `start` calls it; experiments may call it earlier
        so that set-up time never lands in a measurement)."""
        if not self._set_up:
            self._set_up = True  # set first: a failed set-up is still undone by close()
            self._setup()

    def close(self) -> None:
        """Stop every instance, then undo the set-up. Idempotent; for the run's `finally:`.
        If the engine died, it is revived first, to remove what the run made through it."""
        try:
            try:
                if self._set_up and (self.dead is not None or self.engine_gone() is not None):
                    self._revive()
            finally:
                self.stop_all()
            if self.observe.reap:
                from virtbench.runtimes import owners

                owners.end(self.observe.reap, timeout=30)
                self.observe.reap = []
        finally:
            if self._set_up:
                self._set_up = False
                self._close()

    # --- what `virtbench clean` finds of it (class methods: clean has no run) ----------
    @classmethod
    def list_objects(cls) -> list[tuple[str, str]]:
        """(kind, name) of all its own registry holds on the host, ours or not (instances;
        an engine's images, networks); ListingError when it cannot list (leftovers.py).
        Ours are named `vb-<run-id>-...`; clean keeps those of runs not alive. Default:
        none (instances that are plain processes, found by cgroup or environment)."""
        return []

    @classmethod
    def remove_object(cls, kind: str, name: str) -> None:
        """Force-remove one object `list_objects` returned."""
        del kind, name  # runtimes without a registry of their own have nothing to remove
