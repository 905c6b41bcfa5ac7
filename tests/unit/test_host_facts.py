from pathlib import Path
from unittest.mock import patch

from virtbench.host import cgroups, facts
from virtbench.measure import memory
from virtbench.measure.topology import Topology


def test_kvm_kind(tmp_path: Path):
    mods = tmp_path / "mod"
    mods.mkdir()
    assert facts.kvm_kind(mods, tmp_path / "nokvm") == "none"
    dev = tmp_path / "kvm"
    dev.touch()
    (mods / "kvm_pvm").mkdir()
    assert facts.kvm_kind(mods, dev) == "pvm"


def test_meminfo_parses_bytes(tmp_path: Path):
    f = tmp_path / "meminfo"
    f.write_text("MemTotal:       1000 kB\nMemAvailable:    500 kB\nHugePages_Total:       0\n")
    info = memory.meminfo(f)
    assert info["MemTotal"] == 1024000 and info["MemAvailable"] == 512000
    assert info["HugePages_Total"] == 0


def test_free_pages_on_per_cpu_lists_count_as_free(tmp_path: Path):
    """MemAvailable leaves out the per-CPU free lists; in_use counts them as free."""
    import os

    f = tmp_path / "zoneinfo"
    f.write_text(
        "Node 0, zone   Normal\n  pages free     1000\n  pagesets\n    cpu: 0\n"
        "              count:    6132\n              high:     6630\n    cpu: 1\n"
        "              count:    68\n              high:     6882\n"
    )
    page = os.sysconf("SC_PAGE_SIZE")
    assert memory.pcp_free(f) == 6200 * page
    info = {"MemTotal": 10_000 * page, "MemAvailable": 2_000 * page}
    assert memory.in_use(info, 6200 * page) == 1800 * page
    assert memory.pcp_free(tmp_path / "absent") == 0
    assert 0 <= memory.pcp_free() < memory.meminfo()["MemTotal"]


def test_cgroup_layout_detection(tmp_path: Path):
    hybrid = tmp_path / "hybrid"
    hybrid.write_text(
        "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
        "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
        "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
    )
    lay = cgroups.Layout.detect(hybrid, systemd_init=False)
    assert lay.version == 1 and lay.hybrid_without_hugetlb
    assert lay.memory_dir("vb-x") == Path("/sys/fs/cgroup/memory/virtbench/vb-x")
    v2 = tmp_path / "v2"
    v2.write_text("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")
    lay2 = cgroups.Layout.detect(v2, systemd_init=False)
    assert lay2.version == 2 and not lay2.hybrid_without_hugetlb
    assert lay2.dirs("vb-x") == [Path("/sys/fs/cgroup/virtbench/vb-x")]


def test_pss_of_this_process_is_positive():
    import os

    assert memory.pss_total([os.getpid()]) > 0
    assert memory.pss_bytes(2**22 + 12345) is None
    # a vanished process counts as 0 beside a live one; none readable is unknown, not 0
    gone, me = 2**22 + 12345, os.getpid()
    with patch.object(memory, "pss_bytes", lambda pid: None if pid == gone else 5 << 20):
        assert memory.pss_total([me, gone]) == memory.pss_total([me]) == 5 << 20
    assert memory.pss_total([2**22 + 12345]) is None
    assert memory.pss_total([]) is None


def test_a_process_in_its_exec_is_read_once_the_exec_is_done(monkeypatch):
    """ESRCH from smaps_rollup while /proc/PID exists (an exec under way) is waited out;
    past the wait, or once the process is gone, it is None, never 0."""
    import builtins
    import os

    real_open = builtins.open
    calls = {"n": 0}

    def in_exec(path, *a, **kw):
        if str(path).endswith("smaps_rollup") and calls["n"] < 3:
            calls["n"] += 1
            raise ProcessLookupError(3, "No such process")
        return real_open(path, *a, **kw)

    monkeypatch.setattr(memory, "open", in_exec, raising=False)
    assert memory.pss_bytes(os.getpid()) > 0 and calls["n"] == 3

    def always(path, *a, **kw):
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(memory, "open", always, raising=False)
    monkeypatch.setattr(memory, "EXEC_WAIT_S", 0.05)
    assert memory.pss_bytes(os.getpid()) is None


def test_the_host_seam_reads_this_machine():
    """Session.host and the runner's harness default to the real readings."""
    from virtbench.measure.machine import Host
    from virtbench.run.harness import Harness

    h = Host()
    info = h.meminfo()
    assert 0 < h.mem_available() <= info["MemTotal"]
    assert h.running() >= 1  # the reader itself
    assert h.topology() == Topology.detect()
    assert Harness().layout() == cgroups.Layout.detect()


def test_what_an_engine_left_is_removed_and_what_was_there_before_stays(tmp_path: Path):
    """runtimes/traces.py: files that appeared in a watched directory since the snapshot
    go, older ones stay; a jump to a new chain is turned into its delete."""
    from virtbench.runtimes import traces

    netns = tmp_path / "netns"
    netns.mkdir()
    (netns / "host-owned").write_text("")
    before = traces.snapshot((str(tmp_path),), (str(netns),), firewall=False)
    (netns / "3f2a91c0").write_text("")  # a sandbox's file the engine left
    assert traces.remove_new(before, (str(tmp_path),), (str(netns),), firewall=False) == []
    assert [p.name for p in netns.iterdir()] == ["host-owned"]
    rules = [
        "-P FORWARD ACCEPT",
        "-N CNI-FORWARD",
        '-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
        "-A CNI-FORWARD -j CNI-ADMIN",
        "-A DOCKER-USER -j RETURN",
    ]
    assert traces.jumps_to(rules, "CNI-FORWARD") == [
        [
            "-D",
            "FORWARD",
            "-m",
            "comment",
            "--comment",
            "CNI firewall plugin rules",
            "-j",
            "CNI-FORWARD",
        ],
    ]
    assert traces.jumps_to(rules, "CNI-ADMIN") == [["-D", "CNI-FORWARD", "-j", "CNI-ADMIN"]]


def test_mitigations_and_smt_are_read_as_the_kernel_reports_them(tmp_path):
    vulns = tmp_path / "vulnerabilities"
    vulns.mkdir()
    (vulns / "meltdown").write_text("Not affected\n")
    (vulns / "spectre_v2").write_text("Mitigation: Retpolines; IBPB: conditional\n")
    (vulns / "mds").write_text("Vulnerable: Clear CPU buffers attempted, no microcode\n")
    (vulns / "l1tf").write_text("Unknown: something new\n")
    cmdline = tmp_path / "cmdline"
    cmdline.write_text("root=/dev/vda ro mitigations=off quiet\n")
    got = facts.mitigations(vulns, cmdline)
    assert got["setting"] == "off"
    assert got["counts"] == {"mitigated": 1, "vulnerable": 1, "not affected": 1, "other": 1}
    assert got["vulnerabilities"]["spectre_v2"].startswith("Mitigation: Retpolines")
    cmdline.write_text("root=/dev/vda\n")
    assert facts.mitigations(vulns, cmdline)["setting"] == "auto"
    missing = facts.mitigations(tmp_path / "none", cmdline)
    assert missing["setting"] == "auto" and "none" in missing["error"]  # said, not empty
    smt = tmp_path / "control"
    smt.write_text("notsupported\n")
    assert facts.smt_control(smt) == "notsupported"
    assert facts.smt_control(tmp_path / "absent") == "unknown"
    real = facts.snapshot({})
    assert real["mitigations"]["setting"] and "smt_control" in real


def test_smt_and_mitigations_read_in_words():
    from virtbench.report.facts import mitigation_setting_words, smt_words

    assert smt_words("notsupported") == "not supported" and smt_words("forceoff") == "forced off"
    assert (
        mitigation_setting_words("auto,no_guest_host,no_guest_guest")
        == "auto, except guest to host and guest to guest"
    )
    assert mitigation_setting_words("auto,nosmt") == "auto, nosmt"
    assert mitigation_setting_words("off") == "off"
