"""CLI argument handling that needs no root: errors are one line and name the flag."""

from typer.testing import CliRunner

from virtbench.cli import app

runner = CliRunner()


def test_unknown_catalog_entry():
    res = runner.invoke(app, ["run", "no-such-experiment"])
    assert res.exit_code == 2
    assert "not a spec file or catalog entry" in res.output and "quickstart" in res.output


def test_flag_errors_name_the_flag():
    res = runner.invoke(app, ["run", "boot", "--runs", "0"])
    assert res.exit_code == 2 and "--runs:" in res.output
    res = runner.invoke(app, ["run", "boot", "--instances", "5"])
    assert res.exit_code == 2 and "--instances: does not apply" in res.output
    res = runner.invoke(app, ["run", "boot", "--runtimes", ","])
    assert res.exit_code == 2 and "--runtimes: give a comma-separated list" in res.output


def test_clean_validates_run_id():
    res = runner.invoke(app, ["clean", "--run", "../etc"])
    assert res.exit_code == 2 and "--run: '../etc' is not a run id" in res.output


def test_show_unknown_run(tmp_path):
    res = runner.invoke(app, ["show", "zzz999", "--results", str(tmp_path)])
    assert res.exit_code == 2 and "run 'zzz999' not found" in res.output
    res = runner.invoke(app, ["list", "--results", str(tmp_path)])
    assert res.exit_code == 0 and "no runs" in res.output


def test_an_error_echoing_line_breaks_of_the_input_stays_one_line():
    """The fuzzer's find: NEL (U+0085) in a spec name split the error in two."""
    from virtbench.cli_common import one_line

    assert one_line("a\x85b\u2028c\nd\x00 é 中") == "a\\x85b\\u2028c\\nd\\x00 é 中"
    res = runner.invoke(app, ["run", "x\x85y"])
    assert res.exit_code == 2
    assert res.output.count("\n") == 1 and "x\\x85y: not a spec file" in res.output


def test_a_clean_never_says_it_removed_what_another_clean_holds(tmp_path, monkeypatch):
    """Two cleans at once: the one that finds a dead run's lock taken by the other leaves
    that run's objects alone, says so and exits 1; it does not count them as removed once
    the other has removed them (its rescan no longer sees them)."""
    from virtbench import cleanup, cli_clean, state

    run_dir = tmp_path / "state" / "runs" / "zz0001"
    item = cleanup.Leftover("state", str(run_dir), "zz0001")
    scans = iter([[item], []])  # found, then gone (the other clean removed it)
    monkeypatch.setattr(cleanup, "scan", lambda *a, **k: next(scans))
    monkeypatch.setattr(cleanup, "remove_empty_parents", lambda *a, **k: [])
    monkeypatch.setattr(cli_clean, "_require_root", lambda what: None)
    monkeypatch.setenv("VIRTBENCH_STATE_DIR", str(tmp_path / "state"))
    with state.holding("zz0001") as held:  # the other clean, removing the run's objects
        assert held
        res = runner.invoke(app, ["clean", "--results", str(tmp_path / "results")])
    assert res.exit_code == 1, res.output
    assert "run zz0001 is alive (running, resumed or being cleaned)" in res.output
    assert "removed" not in res.output
