"""Host facts for the environment snapshot and `doctor`, and the host resource sampler.

Every run stores a snapshot of the keys in `snapshot()`: kernel, CPU model and count,
SMT, memory, swap, KVM kind, cgroup version, runtime and tool versions.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil

from virtbench import __version__, cgroups, proc
from virtbench.errors import VirtbenchError


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def smt_active() -> bool | None:
    p = Path("/sys/devices/system/cpu/smt/active")
    try:
        return p.read_text().strip() == "1"
    except OSError:
        return None


def smt_control(path: Path = Path("/sys/devices/system/cpu/smt/control")) -> str:
    """SMT as the kernel controls it: on, off, forceoff, notsupported, notimplemented
    (or "unknown" where the file is missing)."""
    try:
        return path.read_text().strip()
    except OSError:
        return "unknown"


def mitigations(
    vulns: Path = Path("/sys/devices/system/cpu/vulnerabilities"),
    cmdline: Path = Path("/proc/cmdline"),
) -> dict[str, Any]:
    """CPU vulnerability mitigations, which change syscall and context-switch cost
    several-fold: the kernel's `mitigations=` setting (default auto), each vulnerability's
    state as the kernel reports it, and a count per kind (mitigated, vulnerable, not
    affected, other)."""
    try:
        words = cmdline.read_text().split()
    except OSError:
        words = []
    setting = next((w.split("=", 1)[1] for w in words if w.startswith("mitigations=")), "auto")
    states: dict[str, str] = {}
    try:
        for f in sorted(vulns.iterdir()):
            try:
                states[f.name] = f.read_text().strip()
            except OSError as exc:
                states[f.name] = f"unreadable ({exc.strerror})"
    except OSError as exc:
        return {"setting": setting, "error": f"{vulns}: {exc.strerror}"}
    counts = {"mitigated": 0, "vulnerable": 0, "not affected": 0, "other": 0}
    for text in states.values():
        if text.startswith("Mitigation"):
            counts["mitigated"] += 1
        elif text.startswith("Vulnerable"):
            counts["vulnerable"] += 1
        elif text.startswith("Not affected"):
            counts["not affected"] += 1
        else:
            counts["other"] += 1
    return {"setting": setting, "counts": counts, "vulnerabilities": states}


def kvm_kind(sys_module: Path = Path("/sys/module"), dev: Path = Path("/dev/kvm")) -> str:
    """none | pvm | nested | hardware: what /dev/kvm is, which decides what guests boot."""
    if not dev.exists():
        return "none"
    if (sys_module / "kvm_pvm").exists():
        return "pvm"
    hypervisor = "hypervisor" in Path("/proc/cpuinfo").read_text().split("flags", 1)[-1][:4000]
    return "nested" if hypervisor else "hardware"


def tool_version(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        out = proc.run(argv, timeout=10, check=False)
    except VirtbenchError:
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else None


TOOLS = {
    "musl-gcc": None,  # the guest compiler: presence only
    "hyperfine": ["hyperfine", "--version"],
    "ip": ["ip", "-V"],
}


def snapshot(runtime_versions: dict[str, str]) -> dict:
    """The environment snapshot stored with each run."""
    vm = psutil.virtual_memory()
    sw = psutil.swap_memory()
    layout = cgroups.Layout.detect()
    tools = {}
    for name, argv in TOOLS.items():
        tools[name] = (tool_version(argv) if argv else shutil.which(name)) or "missing"
    return {
        "virtbench": __version__,
        "hostname": platform.node(),
        "kernel": platform.release(),
        "os": _os_release(),
        "python": platform.python_version(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_allowed": sorted(os.sched_getaffinity(0)),
        "smt": smt_active(),
        "smt_control": smt_control(),
        "mitigations": mitigations(),
        "memory_bytes": vm.total,
        "swap_bytes": sw.total,
        "kvm": kvm_kind(),
        "cgroup_version": {1: "v1 (hybrid)" if layout.unified else "v1", 2: "v2"}.get(
            layout.version, "none"
        ),
        "runtimes": runtime_versions,
        "tools": tools,
    }


def _os_release() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return platform.platform()


def _memory_pct() -> dict[str, float]:
    """MemAvailable and free swap, % (100 without swap)."""
    vm = psutil.virtual_memory()
    sw = psutil.swap_memory()
    return {
        "host.mem_available_pct": 100.0 * vm.available / vm.total,
        "host.swap_free_pct": 100.0 - sw.percent if sw.total else 100.0,
    }


def availability(window_s: float) -> dict[str, float]:
    """Host resource availability (%): CPU idle over the next `window_s` seconds (this
    call sleeps that long), then MemAvailable and free swap."""
    idle = float(psutil.cpu_times_percent(interval=window_s).idle)
    return {"host.cpu_idle_pct": idle, **_memory_pct()}


class HostSampler:
    """Samples host CPU idle %, MemAvailable % and swap free % every `interval` seconds
    in a thread, and hands batches of (name, unix time, value) to `sink`; while a
    measurement is `watching` an instance, that instance's resource use too
    (measure/procstat.py)."""

    def __init__(
        self, sink: Callable[[list[tuple[str, float, float]]], None], interval: float = 1.0
    ) -> None:
        self.sink = sink
        self.interval = interval
        self._stop = threading.Event()
        # Held while a launch is timed: the sampler's tick (and its store write) waits,
        # so the harness's own thread never competes with the launch it measures.
        self._gate = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="vb-sampler", daemon=True)
        self._watches: list[Any] = []

    @contextlib.contextmanager
    def watching(self, watch: Any) -> Iterator[Any]:
        """Sample `watch` (a ProcWatch: begun here, ended by the caller) at every tick
        while the block runs."""
        watch.begin()
        with self._gate:
            self._watches.append(watch)
        try:
            yield watch
        finally:
            with self._gate:
                self._watches.remove(watch)

    def start(self) -> HostSampler:
        self._thread.start()
        return self

    def _loop(self) -> None:
        psutil.cpu_times_percent(None)  # prime (psutil keeps this state per thread)
        while not self._stop.wait(self.interval):
            with self._gate:
                now = time.time()
                cpu = psutil.cpu_times_percent(None)
                values = {
                    "host.cpu_idle_pct": float(cpu.idle),
                    "host.steal_pct": float(getattr(cpu, "steal", 0.0)),
                    **_memory_pct(),
                }
                points = [(name, now, value) for name, value in values.items()]
                for watch in self._watches:
                    try:
                        points += watch.tick(now)
                    except Exception:  # an instance's processes went: no point this tick
                        continue
                try:
                    self.sink(points)
                except Exception:  # the sampler must never take a run down
                    return

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """No tick while this is held (a launch being timed)."""
        with self._gate:
            yield

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
