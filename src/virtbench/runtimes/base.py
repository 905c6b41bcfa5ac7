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
`Memory`, `Daemons`, `Observe` and `Serves` (observe.py: what is attributed to an
instance, the run's daemons, its processes and ready signal, what it serves a workload
as) and `Attach` (attach.py: bridge, data,
probe address); `__init__` makes one of each (`rt.exec`, `rt.pause`, ...) holding the
driver. A capability a runtime lacks says why in one line (`problem()`). Its spec options
are a pydantic model `Options` (each driver narrows `options` to its own); `variant_option`
is the one a label such as `docker:crun` sets. What it keeps of each instance is its
`State`, made with the instance (`inst.own`).

The public lifecycle (`start`, `launch`, `run_to_exit`, `stop`, `close`) is inherited from
Lifecycle (lifecycle.py), which calls these hooks.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel

from virtbench.host import proc
from virtbench.runtimes import attach, controls, observe
from virtbench.runtimes.lifecycle import Lifecycle
from virtbench.runtimes.model import (  # re-exported: drivers import them from here
    DATA_MOUNT,
    PROBE_MOUNT,
    PROBE_PLACEHOLDER,
    Availability,
    Family,
    Instance,
    InstanceSpec,
    NoOptions,
    NoState,
    RuntimeContext,
    remove_tree,
    which,
)

__all__ = [
    "DATA_MOUNT",
    "PROBE_MOUNT",
    "PROBE_PLACEHOLDER",
    "Availability",
    "Family",
    "Instance",
    "InstanceSpec",
    "NoOptions",
    "NoState",
    "Runtime",
    "RuntimeContext",
    "remove_tree",
    "which",
]


class Runtime(Lifecycle, ABC):
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
    State: ClassVar[type] = NoState  # what its family keeps of each instance (`inst.own`)
    # False: the driver's engine makes its own bridge network (docker, podman), so no
    # virtbench bridge/netns is attached and the probe goes through the unix socket.
    virtbench_bridge: ClassVar[bool] = True
    variant_option: ClassVar[str | None] = None  # the option a `name:variant` label sets
    variants: ClassVar[tuple[str, ...]] = ()
    default_variant: ClassVar[str | None] = None

    @classmethod
    def host_variants(cls) -> tuple[str, ...]:
        """Variants this host offers beyond `variants` (a host containerd's handlers)."""
        return ()

    # the classes of its capabilities and helpers, made once per driver (see the module doc)
    Exec: ClassVar[type[controls.Exec]] = controls.Exec
    Pause: ClassVar[type[controls.Pause]] = controls.CgroupFreezer
    Snapshot: ClassVar[type[controls.Snapshot]] = controls.Snapshot
    Memory: ClassVar[type[observe.Memory]] = observe.Memory
    Daemons: ClassVar[type[observe.RunDaemons]] = observe.RunDaemons
    Observe: ClassVar[type[observe.Observe]] = observe.Observe
    Serves: ClassVar[type[observe.Serves]] = observe.Serves
    Attach: ClassVar[type[attach.Attach]] = attach.Attach

    def __init__(
        self, ctx: RuntimeContext, options: BaseModel | None = None, label: str | None = None
    ) -> None:
        self.ctx = ctx
        # each driver narrows its type (`options: QemuOptions`) to the `Options` it declares
        self.options: BaseModel = options if options is not None else self.Options()
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
        self.serves = self.Serves(self)
        self.attach = self.Attach(self)

    # --- what drivers provide -------------------------------------------------------
    # `options` of these class methods: an instance of the driver's `Options` (each driver
    # narrows its type to that), or None for its defaults
    @classmethod
    @abstractmethod
    def available(cls, options: Any = None) -> Availability:
        """Can this runtime (with these options) run here? Never raises."""

    @classmethod
    def cannot_run(cls, workload: str, options: Any = None) -> str | None:
        """Why this runtime (with these options) cannot run `workload` (None: it can)."""
        del workload, options
        return None

    def _setup(self) -> None:
        """Untimed, once per run: start a daemon, import an image (ledger first)."""

    def _after_start(self, inst: Instance) -> None:
        """Untimed, right after the launch returned (e.g. look up the address)."""

    def _after_exit(self, inst: Instance) -> None:
        """Untimed, after a foreground instance exited (e.g. fetch its output)."""

    def _close(self) -> None:
        """Undo `_setup` (remove images, networks; stop a daemon this run started)."""

    def engine_gone(self) -> str | None:
        """Why its engine (the daemon its instances go through: dockerd, LXD) died or stopped
        answering, or None. Asked only after a failure. Default: None."""
        return None

    def _revive(self) -> None:
        """After the engine died: bring it back (a fresh daemon) so that `close` can
        remove what the run made through it. Default: nothing to revive."""

    def _prepare(self, inst: Instance) -> None:
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
