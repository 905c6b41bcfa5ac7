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
