"""The metric registry (virtbench.metrics): every figure the code records is declared, with the
unit and direction it is recorded in; level suffixes and families resolve; a workload
figure nobody declared gets the default; figures that are not repeated measurements stay
out of the CV target and the comparisons, as they always did."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.unit.test_workload_parsers import DATA, OUTPUTS

from virtbench import metrics, workloads
from virtbench.experiments.adaptive import worst_cv
from virtbench.experiments.session import Session
from virtbench.measure import sampler
from virtbench.report import compare, findings
from virtbench.spec import parse
from virtbench.store import Store
from virtbench.store.frame import as_frame
from virtbench.store.records import Sample

SRC = Path(metrics.__file__).parent.parent  # src/virtbench
NOT_REPEATED = [
    "host.cpu_idle_pct",
    "host.mem_available_pct",
    "host.swap_free_pct",
    "image_size",
    "isolation.attacker_tasks_peak",
    "boot.teardown",
]
NOT_COMPARED = [
    "host.cpu_idle_pct",
    "density.mem_available",
    "density.reached",
    "scalability.reached",
    "image_size",
    "isolation.attacker_tasks_peak",
]


# figures recorded in the unit of the workload they measure (declared open: samples say)
WORKLOADS_UNIT = {"min_memory.probe"}


def declared(name: str, workload: str = "") -> metrics.Metric:
    """Its own declaration: not the default, nor a family's catch-all pattern."""
    m = metrics.find(name, workload)
    if name in WORKLOADS_UNIT:
        assert m is not None and m.is_pattern and m.summary == "series", name
        return m
    assert m is not None and m.unit and m.direction, f"{name} ({workload}) is not declared"
    return m


def test_every_measuring_workload_has_its_output_here():
    assert set(OUTPUTS) == set(workloads.measuring())


def parsed(name: str) -> list[workloads.Metric]:
    """Every figure the workload's parser finds in its captured output."""
    measures = workloads.get(name).measures
    assert measures is not None, f"{name} yields no figures"
    return [fig for file in OUTPUTS[name] for fig in measures.parse((DATA / file).read_text())]


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_workload_figures_are_declared_as_parsed(name):
    """Each figure is one its module declares, in the declared unit and direction, and the
    registry finds that same declaration for it (none declared before shadows it)."""
    wl = workloads.get(name)
    for fig in parsed(name):
        mine = wl.declaration(fig.name)
        assert (mine.unit, mine.direction) == (fig.unit, fig.direction), fig
        assert declared(fig.name, name) is mine and mine.workload == name and mine.includes
        for suffix in ("@16", "@t40"):  # a swept level's suffix is no part of the name
            assert metrics.lookup(fig.name + suffix, name) is mine


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_primary_metric_is_declared_and_parsed(name):
    """A failed measurement is stored under the primary figure, in its declared unit and
    direction: a figure the parser yields, repeated and compared like any other."""
    wl = workloads.get(name)
    assert wl.measures is not None
    primary = wl.measures.primary
    m = declared(primary.name, name)
    assert m is wl.declaration(primary.name) and (m.unit, m.direction) == (
        primary.unit,
        primary.direction,
    )
    assert m.repeated and m.compared and m.headline and m.summary == "median"
    assert primary.name in {fig.name for fig in parsed(name)}


def test_a_parser_names_only_figures_its_workload_declares():
    """A parsed figure is one of its workload's constants, or a member of one of its
    families, in the unit and direction declared; a family itself is no figure."""
    from virtbench.workloads import memcached
    from virtbench.workloads.kind import figure

    assert figure(memcached.LATENCY_P.of(99), 2.5) == workloads.Metric("p99_us", 2.5, "us", "lower")
    assert figure(memcached.OPS_PER_S, 1.0) == workloads.Metric("ops_per_s", 1.0, "ops/s", "higher")
    with pytest.raises(workloads.ParseError, match=r"p\*_us"):
        figure(memcached.LATENCY_P, 1.0)


def test_every_workload_figure_declared_is_one_a_parser_gives():
    """What an experiment type declares and no code uses: tests/unit/test_figures.py."""
    hit = {metrics.find(fig.name, name) for name in OUTPUTS for fig in parsed(name)}
    assert {m for m in metrics.registry() if m.workload} <= hit


def test_host_availability_is_what_scalability_records():
    series = metrics.plotted("scalability")
    assert [m.name for m in series] == list(sampler.availability(0.0))
    assert all((m.unit, m.direction, m.summary) == ("%", "higher", "series") for m in series)


def test_patterns_resolve_families_and_level_suffixes():
    assert metrics.lookup("tps@16", "postgres").name == "tps"
    m = metrics.lookup("read_only.tps@t40", "mariadb")
    assert (m.name, m.unit, m.plot) == ("*.tps", "tx/s", "concurrency")
    p99 = metrics.lookup("tcp.64B.rtt_p99", "latency")
    assert (p99.unit, p99.direction, p99.plot) == ("us", "lower", "latency")
    assert metrics.lookup("udp.1024B.rtt_max", "latency").plot is None  # not a percentile
    # the narrower pattern is declared first: MiB/s, not the operations' ops/s
    assert metrics.lookup("fileio.seqrd.read_mib_per_s@t4", "sysbench").unit == "MiB/s"
    assert metrics.lookup("fileio.seqrd.reads_per_s@t4", "sysbench").unit == "ops/s"
    # one name, two workloads: the workload tells them apart
    assert metrics.lookup("errors", "nginx").unit == "count"
    assert metrics.lookup("errors", "http-fixed").unit == "errors"
    assert metrics.lookup("replies@500", "udp-echo").unit == "datagrams"


def test_a_workload_figure_nobody_declared_gets_the_default():
    for name, workload in (("frobs_per_s@8", "newload"), ("bogus", "nginx"), ("x", "")):
        assert metrics.find(name, workload) is None
        m = metrics.lookup(name, workload)
        assert m.name == name and (m.unit, m.direction) == ("", None)  # the sample's own
        assert m.repeated and m.compared and m.ab_compared and m.headline
        assert m.summary == "median" and m.plot == "concurrency" and not m.pile_up
        assert metrics.is_repeated(name, workload) and metrics.is_compared(name, workload)


def test_an_undeclared_figure_of_an_experiment_is_treated_as_its_family():
    assert metrics.lookup("boot.spawn_to_login").desmet == "boot"
    assert metrics.lookup("density.swap_used").pile_up
    assert not metrics.lookup("scalability.settle").headline
    new_host = metrics.lookup("host.load_avg")
    assert not (new_host.repeated or new_host.compared or new_host.ab_compared)
    assert new_host.summary == "series" and new_host.unit == ""


def test_declarations_are_whole():
    exact = [(m.workload, m.name) for m in metrics.registry() if not m.is_pattern]
    assert len(exact) == len(set(exact))
    for m in metrics.registry():
        assert m.includes and m.summary in ("median", "series", "fit")
        if m.summary == "fit":  # the slope of a declared series
            assert metrics.lookup(m.fits).summary == "series", m.name
        assert m.desmet == ("boot" if m.name.startswith("boot.") else m.direction), m.name
        if not m.is_pattern or m.workload:
            assert m.unit and m.direction in ("lower", "higher"), m.name
            assert m.resolution is None or m.resolution > 0
    times = [m for m in metrics.registry() if m.unit in ("ms", "us", "ns", "s", "MiB")]
    assert all(m.lower_bound == 0.0 for m in times if m.name != "density.host_per_instance")
    assert [m.name for m in metrics.plotted("density")] == [
        "density.pss",
        "density.host_cost",
        "density.kernel_cost",
    ]


def sample(metric: str, value: float, experiment: str = "boot", **kw) -> Sample:
    kw = {"unit": "ms", "direction": "lower", "runtime": "crun", "workload": "hello", **kw}
    return Sample(experiment, metric, value, repetition=0, **kw)


def test_figures_not_repeated_stay_out_of_the_cv_target(tmp_path):
    spec = parse({"name": "a", "runtimes": ["crun"], "experiment": [{"type": "boot"}]}, "t")
    store = Store(tmp_path)
    store.create_run("aaaaa1", "a", [], {})
    s = Session("aaaaa1", spec, store, None, None, {}, metrics.is_repeated, say=lambda m: None)  # type: ignore[arg-type]
    for name in NOT_REPEATED:
        assert not metrics.is_repeated(name)
        for v in (1.0, 100.0, 10.0):  # a CV far above any target
            s.record(sample(name, v))
    assert worst_cv(s, "boot", 0.0) is None  # nothing to judge by
    for v in (10.0, 11.0):
        s.record(sample("boot.spawn_to_exit", v))
    worst = worst_cv(s, "boot", 0.0)
    assert worst is not None and worst[1] == "crun boot.spawn_to_exit"
    for name in ("density.reached", "scalability.reached", "density.mem_available"):
        assert not metrics.is_repeated(name)


def test_figures_not_compared_stay_out_of_the_report_and_host_state_out_of_compare():
    rows = [sample(name, float(v), background=v) for name in NOT_COMPARED for v in (1, 2, 3)]
    rows += [sample(n, 1.0) for n in ("boot.teardown", "density.pss", "tps@4")]
    grouped = {k[1] for k in findings.condition_groups(rows)}
    assert grouped == {"boot.teardown", "density.pss", "tps@4"}
    assert all(not metrics.is_compared(n) for n in NOT_COMPARED)
    keys = compare._groups(as_frame(rows), with_runtime=False)
    assert {k[1] for k in keys} == {*NOT_COMPARED, "boot.teardown", "density.pss", "tps@4"} - {
        "host.cpu_idle_pct"
    }
    # a pile-up's background count is where in it: one group per run, not three
    assert len([k for k in keys if k[1] == "density.reached"]) == 1
    assert len([k for k in keys if k[1] == "image_size"]) == 3


def _wildcards(name: str) -> int:
    return sum(name.count(c) for c in "*?")


def test_every_declaration_has_a_label_a_person_reads():
    """A label: a few words, no id's underscores or dots (a decimal point aside), not the
    name itself, one `{}` per wildcard of a pattern's name (else it is shown unfilled)."""
    for m in metrics.registry():
        who = f"{m.name} ({m.workload})"
        assert m.label.strip() and m.label != m.name, who
        assert "_" not in m.label and "." not in re.sub(r"\d\.\d", "", m.label), who
        assert len(m.label) <= 36, who
        assert m.label.count("{}") == (_wildcards(m.name) if m.is_pattern else 0), who
    # each workload's (and the experiments' own, workload "") tell its figures apart
    by_workload: dict[str, dict[str, str]] = {}
    for m in metrics.registry():
        seen = by_workload.setdefault(m.workload, {})
        assert m.label not in seen, (m.name, seen.get(m.label), m.workload)
        seen[m.label] = m.name


def test_a_label_reads_a_figure_its_wildcards_and_level_filled_in():
    assert metrics.label("get.requests_per_s", "redis") == "get requests/s"
    assert metrics.label("tps@16", "postgres") == "transactions/s at 16"
    assert metrics.label("tps@16", "postgres").endswith(" at 16")
    assert metrics.label("read_only.latency_p95@t40", "mariadb") == "read only latency p95 at t40"
    assert metrics.label("tcp.64B.rtt_p99", "latency") == "tcp 64-byte round trip p99"
    assert metrics.label("randrw.read.iops", "fio") == "randrw read IOPS"
    assert metrics.label("boot.spawn_to_exit") == "time to run and exit"
    assert metrics.label("density.host_cost") == "memory per instance"
    assert metrics.label("boot.spawn_to_login") == "boot spawn to login"  # its family's
