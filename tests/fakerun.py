"""A fake runtime for the CLI, store and report tests: no root, no instances.

It writes a run into a store the way a real run does (spec, environment, artifacts,
samples with every label, host series, events, warm-ups, a failed sample) from seeded
log-normal distributions, so a test knows the truth it injected: `factors` scales each
runtime's figures in the metric's worse direction (1.10 = 10% slower).
"""

from __future__ import annotations

import time

import numpy as np

from virtbench.store import Sample, Store

ENVIRONMENT = {
    "virtbench": "0.1.0",
    "hostname": "fake",
    "kernel": "6.1.0-fake",
    "os": "Debian GNU/Linux 12 (bookworm)",
    "cpu_model": "Fake CPU",
    "cpu_count": 2,
    "smt": False,
    "memory_bytes": 24 << 30,
    "swap_bytes": 0,
    "kvm": "none",
    "cgroup_version": "v1 (hybrid)",
    "runtimes": {},
}

BOOT_MS = 20.0
CV = 0.05


def fake_run(
    store: Store,
    run_id: str,
    factors: dict[str, float],
    experiments: tuple[str, ...] = ("boot",),
    n: int = 20,
    seed: int = 0,
    cv: float = CV,
    name: str = "fake",
    host: str = "",
    fleet: str = "",
    emulated: tuple[str, ...] = (),
) -> str:
    """Write run `run_id` with runtimes `factors` (name -> slowdown factor) and return it;
    `host` and `fleet` make it one host's run of a fleet; the `emulated` runtimes' samples
    are marked as measured under emulation."""
    rng = np.random.default_rng(seed)
    runtimes = list(factors)
    spec = {"name": name, "runtimes": runtimes, "experiment": [{"type": e} for e in experiments]}
    store.create_run(run_id, name, ["virtbench", "run", name], spec, host=host, fleet=fleet)
    env = {**ENVIRONMENT, "runtimes": {r: "0.0-fake" for r in runtimes}}
    store.set_environment(run_id, env)
    store.add_artifact(run_id, {"name": "rootfs-fake", "digest": "f" * 64, "disk_bytes": 4096})
    w = _Writer(store, run_id, rng, n, cv, frozenset(emulated))
    for runtime, f in factors.items():
        params = {"network": "none", "artifact": "f" * 16}
        for experiment, write in WRITERS.items():  # in this order: the draws follow it
            if experiment in experiments:
                write(w, runtime, f, params)
    store.add_series(run_id, [("host.cpu_idle_pct", w.t0 + i, 50.0 + i % 7) for i in range(30)])
    store.add_event(run_id, "warning", "isolation: placement smt-sibling skipped: no SMT")
    store.finish_run(run_id, "completed")
    return run_id


class _Writer:
    """One fake run's samples, drawn from one seeded generator (the order of the draws
    decides every value) and written into the store as a real run writes them."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        rng: np.random.Generator,
        n: int,
        cv: float,
        emulated: frozenset[str] = frozenset(),
    ) -> None:
        self.store, self.run_id, self.rng, self.n, self.cv = store, run_id, rng, n, cv
        self.emulated = emulated
        self.t0 = time.time()

    def draw(
        self, median: float, factor: float, direction: str, size: int | None = None
    ) -> np.ndarray:
        """`size` (default: the run's n) log-normal values around `median`, made worse
        by `factor` in the metric's `direction`."""
        scale = factor if direction == "lower" else 1 / factor
        return median * scale * self.rng.lognormal(0.0, self.cv, self.n if size is None else size)

    def add(
        self,
        runtime: str,
        experiment: str,
        metric: str,
        value: float | None,
        unit: str,
        direction: str,
        workload: str,
        rep: int,
        **kw: object,
    ) -> None:
        self.store.add_sample(
            self.run_id,
            Sample(
                experiment=experiment,
                metric=metric,
                value=value,
                unit=unit,
                direction=direction,  # type: ignore[arg-type]
                runtime=runtime,
                workload=workload,
                repetition=rep,
                t=self.t0 + rep,
                emulated=runtime in self.emulated,
                **kw,  # type: ignore[arg-type]
            ),
        )


def _boot(w: _Writer, runtime: str, f: float, params: dict) -> None:
    """Two warm-ups and n boots of hello, then n teardowns."""
    for i, v in enumerate(w.draw(BOOT_MS, f, "lower", w.n + 2)):
        w.add(
            runtime,
            "boot",
            "boot.spawn_to_exit",
            float(v),
            "ms",
            "lower",
            "hello",
            max(0, i - 2),
            warmup=i < 2,
            params=params,
        )
    for i, v in enumerate(w.draw(5.0, f, "lower")):
        w.add(runtime, "boot", "boot.teardown", float(v), "ms", "lower", "sleep", i, params=params)


def _density(w: _Writer, runtime: str, f: float, params: dict) -> None:
    """Each of 50 sleepers' PSS, and the host's memory every 10 of them."""
    for k in range(1, 51):
        w.add(
            runtime,
            "density",
            "density.pss",
            float(w.draw(2.0, f, "lower", 1)[0]),
            "MiB",
            "lower",
            "sleep",
            0,
            background=k - 1,
            params=params,
        )
    for k in range(0, 51, 10):  # the host at each step: 4 MiB x f per instance
        for metric, base, per in (
            ("density.host_used", 900.0, 4.0),
            ("density.kernel_used", 300.0, 1.0),
            ("density.user_pss", 0.0, 2.0),
        ):
            noise = float(w.rng.normal(0.0, 0.2))
            w.add(
                runtime,
                "density",
                metric,
                base + per * f * k + noise,
                "MiB",
                "lower",
                "sleep",
                0,
                background=k,
                params=params,
            )


def _throughput(w: _Writer, runtime: str, f: float, params: dict) -> None:
    """postgres's tps at three levels (one failed at 16), then the latency workload's
    percentiles."""
    for level in (1, 4, 16):
        for i, v in enumerate(w.draw(1000.0 * min(level, 4), f, "higher", 5)):
            w.add(
                runtime,
                "throughput",
                f"tps@{level}",
                float(v),
                "tx/s",
                "higher",
                "postgres",
                i,
                params={**params, "level": level},
            )
    w.add(
        runtime,
        "throughput",
        "tps@16",
        None,
        "tx/s",
        "higher",
        "postgres",
        5,
        error="pgbench: connection refused",
        params={**params, "level": 16},
    )
    for i in range(5):  # the latency workload's percentiles, one set per repetition
        base = float(w.draw(80.0, f, "lower", 1)[0])
        for pct, mult in (("50", 1.0), ("90", 1.3), ("99", 2.0), ("999", 4.0)):
            w.add(
                runtime,
                "throughput",
                f"tcp.64B.rtt_p{pct}",
                base * mult,
                "us",
                "lower",
                "latency",
                i,
                params={**params, "level": "tcp:64"},
            )


def _scalability(w: _Writer, runtime: str, f: float, params: dict) -> None:
    """Three pile-ups: a boot and the host's availability at 0, 10, 20, 30 background."""
    for rep in range(3):
        for bg in (0, 10, 20, 30):
            grow = 1 + bg / 100
            w.add(
                runtime,
                "scalability",
                "boot.spawn_to_exit",
                float(w.draw(BOOT_MS * grow, f, "lower", 1)[0]),
                "ms",
                "lower",
                "hello",
                rep,
                background=bg,
                params=params,
            )
            for metric, v in (
                ("host.cpu_idle_pct", 97 - bg / 10),
                ("host.mem_available_pct", 98 - bg / 20),
                ("host.swap_free_pct", 100.0),
            ):
                w.add(
                    runtime,
                    "scalability",
                    metric,
                    v,
                    "%",
                    "higher",
                    "hello",
                    rep,
                    background=bg,
                    params=params,
                )


def _isolation(w: _Writer, runtime: str, f: float, params: dict) -> None:
    """sqlite's inserts alone and next to two attackers (cpu twice as slow on its CPU)."""
    conds = [
        ("", "", 1.0),
        ("cpu", "same-cpu", 2.0),
        ("cpu", "other-cpu", 1.02),
        ("fork", "same-cpu", 1.5),
    ]
    for attacker, placement, slow in conds:
        for i, v in enumerate(w.draw(1000.0, f * slow, "higher")):
            w.add(
                runtime,
                "isolation",
                "inserts_per_s",
                float(v),
                "rows/s",
                "higher",
                "sqlite",
                i,
                attacker=attacker,
                placement=placement,
                params=params,
            )


# Each experiment's samples of one runtime, in the order fake_run writes them.
WRITERS = {
    "boot": _boot,
    "density": _density,
    "throughput": _throughput,
    "scalability": _scalability,
    "isolation": _isolation,
}
