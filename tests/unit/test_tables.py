from rich.console import Console

from virtbench.report.isolation_table import isolation_table
from virtbench.report.tables import scalability_table
from virtbench.store import Sample


def sample(metric, value, runtime="crun", **kw):
    base = dict(
        experiment=kw.pop("experiment", "isolation"),
        metric=metric,
        value=value,
        unit=kw.pop("unit", "rows/s"),
        direction=kw.pop("direction", "higher"),
        runtime=runtime,
        workload="sqlite",
        repetition=kw.pop("repetition", 0),
    )
    return Sample(**base, **kw)


def text(table) -> str:
    c = Console(width=200, record=True)
    c.print(table)
    return c.export_text()


def test_isolation_table_gives_slowdown_per_attacker_and_placement():
    rows = []
    for i in range(5):
        rows.append(sample("inserts_per_s", 1000.0 + i, repetition=i))
        rows.append(sample("inserts_per_s", 500.0 + i, attacker="cpu", placement="same-cpu"))
        rows.append(sample("inserts_per_s", 1000.0 - i, attacker="cpu", placement="other-cpu"))
        rows.append(sample("seconds", 1.0, unit="s", direction="lower"))
    rows.append(sample("inserts_per_s", None, attacker="fork", placement="same-cpu", error="x"))
    rows.append(sample("inserts_per_s", 1.0, attacker="cpu", placement="same-cpu", warmup=True))
    out = text(isolation_table("t", rows, ["crun"]))
    assert "(baseline)" in out and "1,002 n=5" in out
    same = next(ln for ln in out.splitlines() if "cpu" in ln and "same-cpu" in ln)
    assert "+99.6%" in same  # 1002 / 502 - 1: about twice as slow
    other = next(ln for ln in out.splitlines() if "cpu" in ln and "other-cpu" in ln)
    assert "+0.4%" in other
    fork = next(ln for ln in out.splitlines() if "fork" in ln)
    assert "(1 failed)" in fork


def test_scalability_table_normalises_to_the_first_point():
    rows = []
    for n, v in ((0, 10.0), (50, 12.0), (100, 15.0)):
        for rep in range(3):
            kw = dict(experiment="scalability", background=n, repetition=rep)
            rows.append(sample("boot.spawn_to_exit", v, unit="ms", direction="lower", **kw))
            rows.append(sample("host.cpu_idle_pct", 90.0 - n / 10, unit="%", **kw))
            rows.append(sample("host.mem_available_pct", 95.0, unit="%", **kw))
    out = text(scalability_table("t", rows, ["crun"]))
    assert "(time to run and exit, ms)" in out
    last = next(ln for ln in out.splitlines() if ln.strip().startswith("│") and " 100 " in ln)
    assert "1.50x" in last and "80%" in last and "95%" in last and "100%" not in last
    first = next(ln for ln in out.splitlines() if ln.strip().startswith("│") and " 0 " in ln)
    assert "1.00x" in first and "10 " in first


def test_a_placement_whose_attack_slowdowns_overlap_says_it_cannot_tell_kinds_apart():
    from virtbench.report.isolation_table import inseparable

    same = [("cpu", 1.0, 0.9, 1.1), ("fork", 1.05, 0.95, 1.15), ("open", 0.97, 0.89, 1.04)]
    apart = [("cpu", 0.02, -0.01, 0.05), ("memory", 0.3, 0.25, 0.35)]
    notes = inseparable({("native", "same-cpu"): same, ("native", "other-cpu"): apart})
    assert len(notes) == 1
    assert notes[0].startswith("native at same-cpu: the 3 attackers' slowdowns (+97% to +105%)")
    assert "cannot tell attack kinds apart" in notes[0] and "share the worker's CPU" in notes[0]
    assert inseparable({("crun", "same-cpu"): same[:1]}) == []  # one attacker: nothing to tell


def test_a_slowdown_against_a_baseline_of_nothing_is_refused_with_its_reason():
    rows = [sample("seconds", 0.0, unit="s", direction="lower", repetition=i) for i in range(5)]
    rows += [
        sample(
            "seconds",
            0.5,
            unit="s",
            direction="lower",
            attacker="cpu",
            placement="same-cpu",
            repetition=i,
        )
        for i in range(5)
    ]
    out = text(isolation_table("t", rows, ["crun"]))
    line = next(ln for ln in out.splitlines() if "same-cpu" in ln)
    assert "no ratio" in line and "%" not in line
    caption = " ".join(out.split())  # wrapped at the table's width
    assert "crun: crun's baseline's median is 0 s: a ratio to it means nothing" in caption
