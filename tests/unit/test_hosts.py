"""Runs of a fleet's hosts: found by the fleet id, listed with their host, compared host
against host (`compare FLEET --hosts a,b`, and the report's "Hosts compared")."""

from __future__ import annotations

from tests.fakerun import fake_run
from typer.testing import CliRunner

from virtbench.cli import app
from virtbench.store import Store

runner = CliRunner()


def cli(tmp_path, *args):
    return runner.invoke(app, [*args, "--results", str(tmp_path)], env={"COLUMNS": "200"})


def fleet(tmp_path, slower: float = 1.2) -> Store:
    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"native": 1.0, "crun": 1.1}, seed=1, host="h1", fleet="flt001")
    fake_run(
        store, "bbbbb2", {"native": slower, "crun": 1.1 * slower}, seed=2, host="h2", fleet="flt001"
    )
    fake_run(store, "ccccc3", {"native": 1.0}, seed=3)  # a local run, not of the fleet
    return store


def test_list_shows_host_and_fleet_columns(tmp_path):
    fleet(tmp_path)
    res = cli(tmp_path, "list")
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.output.splitlines() if "bbbbb2" in ln)
    assert "h2" in line and "flt001" in line


def test_compare_by_host_flags_the_slower_host(tmp_path):
    fleet(tmp_path)
    res = cli(tmp_path, "compare", "flt001", "--hosts", "h1,h2")
    assert res.exit_code == 1, res.output
    assert "A = aaaaa1 h1, B = bbbbb2 h2: B against A" in res.output
    line = next(
        ln
        for ln in res.output.splitlines()
        if "time to run and exit (hello, crun)" in ln and "│" in ln
    )
    assert "worse" in line
    assert "B (bbbbb2 h2) is 1.2" in res.output  # its sentence: B in A's terms, about 1.2x
    same = cli(tmp_path, "compare", "flt001", "--hosts", "h1,h1")
    assert same.exit_code == 0 and "0 worse, 0 better" in same.output


def test_compare_by_host_names_what_to_fix(tmp_path):
    fleet(tmp_path)
    res = cli(tmp_path, "compare", "flt001", "--hosts", "h1,h9")
    assert res.exit_code == 2
    assert "--hosts: fleet flt001 has no run of 'h9' (it has: h1, h2)" in res.output
    res = cli(tmp_path, "compare", "zzzzz9", "--hosts", "h1,h2")
    assert res.exit_code == 2 and "'zzzzz9' is not a fleet id" in res.output
    res = cli(tmp_path, "compare", "flt001", "--hosts", "h1")
    assert res.exit_code == 2 and "--hosts: give two hosts a,b and one fleet id" in res.output


def test_report_of_a_fleet_has_every_host_and_compares_them(tmp_path):
    fleet(tmp_path)
    out = tmp_path / "r.html"
    res = cli(tmp_path, "report", "flt001", "-o", str(out))
    assert res.exit_code == 0, res.output
    assert "report of aaaaa1, bbbbb2 written" in res.output  # the fleet's runs, not ccccc3
    text = out.read_text()
    assert "Run aaaaa1: fake on h1" in text and "Run bbbbb2: fake on h2" in text
    assert "Hosts compared" in text and "A = h1, B = h2: B against A" in text
    assert text.count("worse") >= 2  # native and crun boot on h2
    assert "different testbeds" not in text  # the fake runs record no host facts
    store = Store(tmp_path)
    store.set_environment("aaaaa1", {"cpu_model": "EPYC", "cpu_count": 2, "kernel": "6.1"})
    store.set_environment("bbbbb2", {"cpu_model": "EPYC", "cpu_count": 16, "kernel": "6.1"})
    assert cli(tmp_path, "report", "flt001", "-o", str(out)).exit_code == 0
    assert "h2 and h1 are different testbeds: cpu count 2 vs 16." in out.read_text()


def test_report_of_a_sharded_fleet_says_the_hosts_share_no_measure(tmp_path):
    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"native": 1.0}, seed=1, host="h1", fleet="flt002")
    fake_run(store, "bbbbb2", {"crun": 1.0}, seed=2, host="h2", fleet="flt002")
    out = tmp_path / "r.html"
    res = cli(tmp_path, "report", "flt002", "-o", str(out))
    assert res.exit_code == 0, res.output
    assert "h2 against h1: no measure was taken on both hosts." in out.read_text()
