"""What an instance costs (`report --host-price`), worked out from injected truth: the
fake runtime's memory and idle CPU per instance are known, so instances per host and the
cost per instance-hour are too, and the report's intervals must hold them."""

from __future__ import annotations

import math

from tests.fakeruntime import fake_session, run
from tests.faketruth import RuntimeTruth, Truth

from virtbench.report import cost
from virtbench.store.frame import as_frame

HOST = cost.Host(price=0.5, memory_mib=4096.0, cpus=2.0)


def ranged(cell: str) -> tuple[float, float, float]:
    """ "1,234 (1,100-1,300)" -> (1234, 1100, 1300)."""
    value, _, rest = cell.partition(" (")
    low, _, high = rest.rstrip(")").partition("-")
    a, b, c = (float(x.replace(",", "")) for x in (value, low, high))
    return a, b, c


def test_instances_per_host_and_their_cost_hold_the_injected_truth(tmp_path):
    """fa costs 3 + 1 MiB and 1 millicore idle: memory bounds it (4096 / 4 = 1,024); fb
    costs 8 + 2 MiB and 10 millicores: CPU bounds it (2,000 / 10 = 200, fewer than 4096 /
    10). Each interval holds the truth; the cost is the host's price over instances."""
    truth = Truth(
        {
            "fa": RuntimeTruth(pss_mib=3.0, kernel_mib=1.0, idle_mcpu=1.0),
            "fb": RuntimeTruth(pss_mib=8.0, kernel_mib=2.0, idle_mcpu=10.0),
        },
        seed=11,
    )
    exp = {"type": "density", "instances": 20, "instances_per_benchmark": 5, "runs": 2}
    exp |= {"idle_cpu_s": 0.2, "memory_settle_s": 0}
    with fake_session(tmp_path, truth, ["fa", "fb"], exp) as (s, _world):
        samples = run(s)
    t = cost.table(as_frame(samples), HOST, "run x")
    assert t is not None
    rows = {row[0]: row for row in zip(*[list(c.cells) for c in t.columns], strict=True)}
    for rt, want, bound in (("fa", 4096 / 4.0, "memory"), ("fb", 2000 / 10.0, "CPU")):
        _, _, _, instances, by, price = rows[rt]
        n, low, high = ranged(instances)
        assert by == bound and low <= want <= high + 1, (rt, instances)
        p, p_low, p_high = ranged(price)
        assert p_low <= 1000 * HOST.price / want <= p_high, (rt, price)
        assert math.isclose(p, 1000 * HOST.price / n, rel_tol=0.01)
    assert "derived, not measured" in str(t.caption)


def test_an_open_end_is_said_and_a_figure_is_never_divided_by_nothing():
    """A memory figure whose CI reaches the method's resolution leaves the instances'
    top open ("at least"), and the cost's bottom ("at most")."""
    fig = cost.Figure(0.5, -2.0, 3.0, resolution=1 / 1024)
    n = fig.fit(4096.0)
    assert n[0] == 8192.0 and math.isinf(n[2]) and math.isclose(n[1], 4096 / 3)
    assert cost._instances(*n) == "8,192 (at least 1,365)"
    assert cost._price(500.0, *n) == "0.061 (at most 0.366)"
    assert cost._cell(cost.Figure(0.0, 0.0, 0.0, resolution=1e-3), "m") == "< 0.001 m"
    none = cost.Figure(0.0, math.nan, math.nan, resolution=1 / 1024)
    assert cost._instances(*none.fit(4096.0)) == "no bound"


def test_the_host_flags_are_checked_before_anything_is_read(tmp_path):
    """A host size without a price, or a price that is no price, is one line naming the
    flag, exit 2, before any store is opened."""
    from typer.testing import CliRunner

    from virtbench.cli import app

    def said(*args: str) -> str:
        missing = str(tmp_path / "none")
        res = CliRunner().invoke(app, ["report", "x", "--results", missing, *args])
        assert res.exit_code == 2, res.output
        return " ".join(res.output.split())

    assert "give it" in said("--host-memory", "64")
    assert "--host-price: -1 must be more than 0" in said("--host-price", "-1")
    assert "--host-cpus: 0 must be more than 0" in said("--host-price", "1", "--host-cpus", "0")


def test_the_cost_of_a_task_holds_the_injected_truth(tmp_path):
    """fa's tasks, two at once, are done 20 ms (ready) + 8,150 ms (steps) + 5 ms (exec)
    after their create calls: each took half the batch's ~8,175 ms of the host, so the
    host does ~880 an hour and one costs its price / that."""
    truth = Truth({"fa": RuntimeTruth(ready_ms=20.0, cv=0.02, exec_ms=5.0)}, seed=5)
    exp = {"type": "task", "sequential": 0, "levels": [2], "runs": 5, "settle_s": 0}
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, _world):
        samples = run(s)
    t = cost.task_table(as_frame(samples), HOST, "run x")
    assert t is not None and "2 at once" in str(t.title)
    (row,) = zip(*[list(c.cells) for c in t.columns], strict=True)
    _, per_task, per_hour, price = row
    want = 3_600_000 / (8175.0 / 2)
    n, low, high = ranged(per_hour)
    assert low <= want <= high + 1 and abs(n - want) < 10, per_hour
    p, p_low, p_high = ranged(price)
    # the cells are rounded to three figures
    assert p_low * 0.995 <= HOST.price / want <= p_high * 1.005, price
    assert math.isclose(p, HOST.price / n, rel_tol=0.01)
    assert per_task.startswith("4,0") and "derived, not measured" in str(t.caption)
    assert cost.task_table(as_frame([x for x in samples if "@2" not in x.metric]), HOST, "") is None
