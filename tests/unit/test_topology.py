from pathlib import Path

import pytest

from virtbench.measure.topology import PLACEMENTS, Topology, parse_cpulist


def fake_sysfs(root: Path, online: str, siblings: dict[int, str]) -> Path:
    (root / "online").parent.mkdir(parents=True, exist_ok=True)
    (root / "online").write_text(online + "\n")
    for cpu, sib in siblings.items():
        d = root / f"cpu{cpu}" / "topology"
        d.mkdir(parents=True)
        (d / "thread_siblings_list").write_text(sib + "\n")
    return root


def test_cpulist():
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("0") == [0]


def test_two_vcpus_without_smt_skip_the_sibling_with_a_reason(tmp_path):
    topo = Topology.detect(fake_sysfs(tmp_path, "0-1", {0: "0", 1: "1"}))
    w = topo.default_worker_cpu()
    assert w == 1
    assert topo.placement("same-cpu", w) == ([1], "")
    cpus, why = topo.placement("smt-sibling", w)
    assert cpus == [] and "no SMT sibling" in why
    assert topo.placement("other-cpu", w) == ([0], "")
    assert topo.placement("all-other", w) == ([0], "")


def test_smt_host_places_attackers_on_sibling_and_other_cores(tmp_path):
    # 4 cores x 2 threads, Linux numbering: cpu N and N+4 are siblings
    sib = {c: f"{c % 4},{c % 4 + 4}" for c in range(8)}
    topo = Topology.detect(fake_sysfs(tmp_path, "0-7", sib))
    assert topo.placement("smt-sibling", 7) == ([3], "")
    assert topo.placement("other-cpu", 7) == ([0], "")
    assert topo.placement("all-other", 7) == ([0, 1, 2, 4, 5, 6], "")
    with pytest.raises(ValueError, match="unknown placement"):
        topo.placement("left", 7)
    assert len(PLACEMENTS) == 4


def test_single_cpu_offers_only_same_cpu(tmp_path):
    topo = Topology.detect(fake_sysfs(tmp_path, "0", {0: "0"}))
    assert topo.placement("same-cpu", 0) == ([0], "")
    assert topo.placement("other-cpu", 0)[0] == []
    assert "every online CPU" in topo.placement("all-other", 0)[1]


class _Events:
    def __init__(self) -> None:
        from virtbench.measure.machine import Host

        self.events: list[tuple[str, str]] = []
        self.host = Host()

    def event(self, level: str, message: str) -> None:
        self.events.append((level, message))


def test_conditions_skip_placements_that_repeat_an_earlier_one(tmp_path):
    from virtbench.experiments.isolation import IsolationExperiment, conditions

    cfg = IsolationExperiment(type="isolation", attackers=["cpu", "fork"])
    s = _Events()
    two = Topology.detect(fake_sysfs(tmp_path / "two", "0-1", {0: "0", 1: "1"}))
    conds = conditions(s, cfg, two, 1)
    assert conds == [
        ("", "", []),
        ("cpu", "same-cpu", [1]),
        ("fork", "same-cpu", [1]),
        ("cpu", "other-cpu", [0]),
        ("fork", "other-cpu", [0]),
    ]
    said = [m for _, m in s.events]
    assert any("smt-sibling skipped" in m and "no SMT sibling" in m for m in said)
    assert any("all-other skipped: the same attacker CPUs (0) as other-cpu" in m for m in said)
    four = Topology.detect(fake_sysfs(tmp_path / "four", "0-3", {c: str(c) for c in range(4)}))
    placed = {p: cpus for _, p, cpus in conditions(_Events(), cfg, four, 3)}
    assert placed == {"": [], "same-cpu": [3], "other-cpu": [0], "all-other": [0, 1, 2]}


def test_isolation_conditions_skip_memory_hogs_that_would_not_fit(tmp_path):
    """all-other on 8 CPUs x a 256 MiB attacker is 1.75 GiB: with 2 GiB available that is
    more than half, so it is skipped with the reason; on one CPU it fits."""
    from types import SimpleNamespace

    from virtbench.experiments import isolation
    from virtbench.spec import parse

    sib = {c: str(c) for c in range(8)}
    topo = Topology.detect(fake_sysfs(tmp_path, "0-7", sib))
    events = []
    s = SimpleNamespace(
        event=lambda level, msg: events.append((level, msg)),
        host=SimpleNamespace(mem_available=lambda: 2 << 30),
    )
    exp = {
        "type": "isolation",
        "attackers": ["cpu", "mempressure"],
        "placements": ["same-cpu", "all-other"],
    }
    cfg = parse({"name": "i", "runtimes": ["crun"], "experiment": [exp]}, "t").experiment[0]
    conds = isolation.conditions(s, cfg, topo, 7)
    assert [(a, p) for a, p, _ in conds] == [
        ("", ""),
        ("cpu", "same-cpu"),
        ("mempressure", "same-cpu"),
        ("cpu", "all-other"),
    ]
    skipped, (level, msg) = events  # the skip, then what all-other leaves the worker
    assert level == "info" and msg.endswith("7 CPUs (0-6); the worker's core (7) is left to it")
    level, msg = skipped
    assert level == "warning" and "mempressure at all-other skipped: 7 attackers" in msg
    assert "1792 MiB" in msg and "MemAvailable (2048 MiB)" in msg
