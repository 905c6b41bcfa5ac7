"""The public lifecycle every runtime driver inherits (a mixin of Runtime, base.py): the
launch and its halves, running to exit, stopping and closing. It owns timing, the run's
ledger, the network attachment, cgroup removal and idempotency, and calls the driver's
hooks (`_prepare`, `_start`, `_after_start`, `_wait`, `_after_exit`, `_stop`, `_setup`,
`_close`, `_revive`, `engine_gone`) and its capability objects.

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
from typing import TYPE_CHECKING, ClassVar, NoReturn

from virtbench.errors import EngineGone, InstanceError, SpecError
from virtbench.host import cgroups
from virtbench.runtimes import launcher
from virtbench.runtimes.model import Family, Instance, InstanceSpec, RuntimeContext

if TYPE_CHECKING:
    import threading

    from virtbench.runtimes import attach, controls, observe


class Lifecycle:
    """Starting, running and stopping instances, over a driver's hooks (see the module
    doc). Set by Runtime: `ctx`, `label`, `family`, `networks`, `instances`, `dead`, the
    capability objects and the hooks."""

    ctx: RuntimeContext
    label: str
    family: ClassVar[Family]
    networks: ClassVar[tuple[str, ...]]
    instances: dict[str, Instance]
    dead: str | None
    _set_up: bool
    State: ClassVar[type]
    pause: controls.Pause
    observe: observe.Observe
    attach: attach.Attach

    if TYPE_CHECKING:  # the hooks, as Runtime (base.py) declares them and drivers give them

        def _prepare(self, inst: Instance) -> None: ...
        def _start(self, inst: Instance, detach: bool) -> None: ...
        def _after_start(self, inst: Instance) -> None: ...
        def _wait(self, inst: Instance, timeout: float) -> int: ...
        def _after_exit(self, inst: Instance) -> None: ...
        def _stop(self, inst: Instance) -> None: ...
        def _setup(self) -> None: ...
        def _close(self) -> None: ...
        def _revive(self) -> None: ...
        def engine_gone(self) -> str | None: ...
        def cgroup_names(self, inst: Instance) -> list[str]: ...

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
        log_path = log_dir / f"{spec.name}.log"
        inst = Instance(spec=spec, runtime=self.label, log_path=log_path, own=self.State())
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
        inst.defer_launch = True
        try:
            inst.t_spawn_ns = time.monotonic_ns()
            self._start(inst, True)
        except BaseException as exc:
            self._start_failed(inst, exc)
        finally:
            inst.defer_launch = False

    def finish_launch(self, inst: Instance) -> None:
        """The second half: the launcher waited for (t_started_ns), then as `launch`."""
        try:
            pending, inst.pending_launch = inst.pending_launch, None
            if pending is not None:
                launcher.await_launch(inst, pending.what, pending.timeout, pending.hint)
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
            who = f"{self.label}: {spec.name}"
            raise launcher.wait_failed(who, exc, timeout, inst.log_tail()) from exc
        if inst.t_exit_ns is None:  # `_wait` may know the exit time better (LXD)
            inst.t_exit_ns = time.monotonic_ns()
        self._after_exit(inst)
        return inst

    def stop(self, inst: Instance) -> float:
        """Stop and remove everything of `inst`; return seconds taken. Idempotent."""
        if inst.stopped:
            return 0.0
        t0 = time.monotonic()
        if inst.paused:  # thawed first: some runtimes cannot delete it frozen
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
