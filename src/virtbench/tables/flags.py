"""`virtbench run`'s flags that each set one experiment field of the spec (`--runs`,
`--step`, S1's spellings): the command's options, their help and the fleet's reading of
them all come from `FLAGS`. Data only, below the spec (spec/flags.py applies them), so
that a command building its options loads no spec model.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Flag:
    """A `virtbench run` option that sets one experiment field of the spec: the command's
    options, their help and the fleet's reading of them all come from `FLAGS`."""

    field: str  # the experiment field it sets
    names: tuple[str, ...]  # its spellings, as help lists them
    kind: type  # int, float or str
    help: str
    listed: bool = False  # a comma-separated list
    s1: tuple[str, ...] = ()  # S1's runner's spellings: a hidden option of their own


FLAGS = (
    Flag("runs", ("--runs",), int, "Repetitions."),
    Flag("warmups", ("--warmups",), int, "Warm-up repetitions (boot)."),
    Flag(
        "benchmark_times",
        ("--benchmark-times",),
        int,
        "Measurements per repetition (boot); steps of background instances (scalability, as S1).",
        s1=("--benchmark_time", "--benchmark_times"),
    ),
    Flag(
        "instances_per_benchmark",
        ("--instances-per-benchmark", "--step"),
        int,
        "Instances between host-memory measurements (density); background instances "
        "added between measurements (scalability).",
        s1=("--instances_per_benchmark",),
    ),
    Flag(
        "instances",
        ("--instances", "--max"),
        int,
        "Instances to start (density); background instances at the end (scalability).",
    ),
    Flag(
        "workloads",
        ("--workloads",),
        str,
        "Comma-separated workloads (boot: hello,sleep).",
        listed=True,
    ),
    Flag(
        "worker",
        ("--worker",),
        str,
        "What is measured (scalability: boot or a workload; isolation).",
    ),
    Flag("background", ("--background",), str, "Idle background instances: sleep, nginx, redis."),
    Flag(
        "attackers",
        ("--attackers",),
        str,
        "Comma-separated attackers (isolation), e.g. cpu,fork.",
        listed=True,
    ),
    Flag(
        "placements",
        ("--placements",),
        str,
        "Comma-separated placements (isolation): same-cpu, smt-sibling, other-cpu, all-other.",
        listed=True,
    ),
    Flag(
        "target_cv",
        ("--target-cv",),
        float,
        "Repeat past --runs until every group's CV is at most this % (boot, throughput, "
        "isolation).",
    ),
    Flag("max_runs", ("--max-runs",), int, "At most this many repetitions with --target-cv."),
)

# CLI flag (every spelling) -> experiment field it sets
FLAG_FIELDS = {name: f.field for f in FLAGS for name in (*f.names, *f.s1)}
