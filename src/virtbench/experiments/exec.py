"""`exec`: how long running a command in an already running instance takes, as a code
sandbox or a CI job does between its starts.

Per runtime and repetition, one `sleep` instance is started and made ready (untimed);
then, `count` times each, two commands run in it through the runtime's own way in
(`runc exec`, `docker exec` over the Engine API, `lxc-attach`, `nsenter` for native and
nspawn: runtimes/controls.py; a VM guest's agent over QEMU's virtio-serial: vm/agent.py),
each timed on the host from the exec call issued to its exit seen with all its output
read:

  exec.true        vb-hello: one line out, exit 0 -- the cost of getting in and out
  exec.stdout_1mib vb-hello 1048576: exactly 1 MiB on standard output, read back whole

A command that exits non-zero, or whose output is not exactly what it wrote, is a failed
sample with the reason. A runtime without exec (a minimal guest or an image: no agent) is
said once, with why, as failed samples. A VM's instance boots its Linux guest, whose
vb-agent runs the commands (runtimes/vm/agent.py). One unit of measurement (`run --resume`)
is a runtime's repetition.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from virtbench.errors import InstanceError
from virtbench.experiments.command import HELLO, HELLO_BYTES, wrong
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.held import Operation, each_repetition, recorded, running
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.session import Session
from virtbench.figure import MONO, NS_MS, Metric
from virtbench.runtimes.controls import ExecResult
from virtbench.tables.base import (
    CommonExperiment,
)

UNIT = ("runtime", "repetition", "workload")

# The figures it records (virtbench.figure).
TRUE = Metric(
    "exec.true",
    "ms",
    "lower",
    "the exec call issued (runc exec, docker exec over the API, lxc-attach, nsenter) -> "
    "vb-hello's one line read and its exit seen" + MONO,
    resolution=NS_MS,
    label="a command inside",
)
STDOUT_1MIB = Metric(
    "exec.stdout_1mib",
    "ms",
    "lower",
    "the exec call issued -> all 1 MiB of its standard output read back and its exit seen" + MONO,
    resolution=NS_MS,
    label="1 MiB of output from inside",
)
METRICS = (TRUE, STDOUT_1MIB)


class ExecExperiment(CommonExperiment):
    """Commands run in an already running instance: `count` times each per repetition,
    one that prints a line and one that writes `stdout_bytes` to standard output."""

    RUNS_COMMANDS = True
    type: Literal["exec"]
    workload: Literal["sleep"] = "sleep"
    runs: int = Field(default=3, ge=1, le=1000)
    count: int = Field(default=50, ge=1, le=100000)
    stdout_bytes: int = Field(default=1 << 20, ge=1, le=1 << 30)
    timeout_s: float = Field(default=60.0, gt=0, le=3600)

    def instance_workloads(self) -> list[str]:
        return [self.workload]


def commands(cfg: ExecExperiment) -> list[tuple[Metric, list[str], int]]:
    """(figure, argv inside the instance, bytes it writes to stdout)."""
    n = cfg.stdout_bytes
    return [(TRUE, HELLO, HELLO_BYTES), (STDOUT_1MIB, ["/bin/vb-hello", str(n)], n)]


def run(s: Session, cfg: ExecExperiment) -> None:
    op = Operation("exec", lambda rt: rt.exec.problem(), METRICS, exec_once)
    each_repetition(s, cfg, op)


def exec_once(s: Session, runtime: str, cfg: ExecExperiment, base: dict) -> None:
    """One instance; every command `count` times in it. InstanceError when a command
    never succeeded (the runtime's failures count it)."""
    rt = s.runtimes[runtime]
    with running(s, runtime, cfg.workload, cfg.timeout_s, agent=True) as inst:
        for metric, argv, expect in commands(cfg):
            params = dict(base["params"], command=" ".join(argv))
            ok, why = 0, ""
            with s.timed("exec", runtime, params):
                results: list[tuple[ExecResult | None, str]] = []
                for _ in range(cfg.count):
                    try:
                        results.append((rt.exec.run(inst, argv, cfg.timeout_s), ""))
                    except InstanceError as exc:
                        results.append((None, str(exc)))
            for res, err in results:
                err = err or wrong(res, expect)
                value = res.ms if res is not None and not err else None
                s.record(metric.sample(value, error=err, **{**base, "params": params}))
                ok += not err
                why = why or err
            if not ok:
                raise recorded(InstanceError(f"{runtime}: {' '.join(argv)} never succeeded: {why}"))


def estimate(cfg: ExecExperiment, cost: Costs) -> Estimate:
    """One instance per repetition (a VM's boots Linux, for its agent); a command's exec
    costs about a tenth of a launch."""
    execs = cfg.runs * 2 * cfg.count
    t = cfg.runs * cost.launch(serving=True) + execs * (0.1 * cost.launch() + 0.005)
    return Estimate(cfg.runs, t, f"{cfg.runs} x 2 commands x {cfg.count}")


TYPE = ExperimentType(
    "exec",
    ExecExperiment,
    run,
    UNIT,
    order=80,
    estimate=estimate,
    metrics=METRICS,
)
