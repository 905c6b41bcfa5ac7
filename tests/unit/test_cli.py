"""CLI argument handling that needs no root: errors are one line and name the flag."""

import pytest
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
    from virtbench.store import Store

    Store(tmp_path).close()  # a store without that run
    res = runner.invoke(app, ["show", "zzz999", "--results", str(tmp_path)])
    assert res.exit_code == 2 and "run 'zzz999' not found" in res.output
    res = runner.invoke(app, ["list", "--results", str(tmp_path)])
    assert res.exit_code == 0 and "no runs" in res.output


def test_an_unknown_baseline_is_an_error_naming_the_run_s_runtimes(tmp_path):
    from tests.fakerun import fake_run

    from virtbench.store import Store

    fake_run(Store(tmp_path), "bbbbb1", {"runc": 1.0, "crun": 1.0})
    res = runner.invoke(app, ["show", "bbbbb1", "--baseline", "foo", "--results", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert (
        res.output.strip()
        == "error: --baseline: run bbbbb1 has no runtime 'foo' (it has: crun, runc)"
    )
    res = runner.invoke(app, ["--results", str(tmp_path), "show", "bbbbb1", "--baseline", "crun"])
    assert res.exit_code == 0 and "run bbbbb1" in res.output, res.output


def test_an_error_echoing_line_breaks_of_the_input_stays_one_line():
    """The fuzzer's find: NEL (U+0085) in a spec name split the error in two."""
    from virtbench.cli.common import one_line

    assert one_line("a\x85b\u2028c\nd\x00 é 中") == "a\\x85b\\u2028c\\nd\\x00 é 中"
    res = runner.invoke(app, ["run", "x\x85y"])
    assert res.exit_code == 2
    assert res.output.count("\n") == 1 and "x\\x85y: not a spec file" in res.output


def test_a_clean_never_says_it_removed_what_another_clean_holds(tmp_path, monkeypatch):
    """Two cleans at once: the one that finds a dead run's lock taken by the other leaves
    that run's objects alone, says so and exits 1; it does not count them as removed once
    the other has removed them (its rescan no longer sees them)."""
    from virtbench.cli import clean as cli_clean
    from virtbench.host import state
    from virtbench.run import cleanup

    run_dir = tmp_path / "state" / "runs" / "zz0001"
    item = cleanup.Leftover("state", str(run_dir), "zz0001")
    scans = iter([[item], []])  # found, then gone (the other clean removed it)
    monkeypatch.setattr(cleanup, "scan", lambda *a, **k: next(scans))
    monkeypatch.setattr(cleanup, "remove_empty_parents", lambda *a, **k: [])
    monkeypatch.setattr(cli_clean, "require_root", lambda what: None)
    monkeypatch.setenv("VIRTBENCH_STATE_DIR", str(tmp_path / "state"))
    with state.holding("zz0001") as held:  # the other clean, removing the run's objects
        assert held
        res = runner.invoke(app, ["clean", "--results", str(tmp_path / "results")])
    assert res.exit_code == 1, res.output
    assert "run zz0001 is alive (running, resumed or being cleaned)" in res.output
    assert "removed" not in res.output


def test_reading_commands_fit_80_columns_and_never_cut_a_value(tmp_path, monkeypatch):
    """list, show, compare and doctor at 80 columns: nothing cut to an ellipsis (a table
    too wide is stacked, one block per row), every run id and runtime whole."""
    from tests.fakerun import fake_run

    from virtbench.store import Store

    st = Store(tmp_path)
    factors = {
        "native": 1.0,
        "runc": 1.05,
        "crun": 1.02,
        "docker": 1.2,
        "podman": 1.3,
        "docker:runsc": 1.9,
    }
    kinds = ("boot", "density", "throughput", "scalability", "isolation")
    fake_run(st, "wide01", factors, kinds, n=6, name="a-rather-long-study-name")
    st.close()
    monkeypatch.setenv("COLUMNS", "80")
    where = ["--results", str(tmp_path)]
    for argv in (
        ["list", *where],
        ["show", "wide01", *where],
        ["compare", "wide01", "--runtimes", "native,docker:runsc", *where],
        ["doctor"],
    ):
        res = runner.invoke(app, argv)
        assert res.exit_code in (0, 1, 3), (argv, res.output)
        assert "…" not in res.output, (argv, res.output)
        drawn = [ln for ln in res.output.splitlines() if "│" in ln or "┃" in ln]
        assert all(len(ln) <= 80 for ln in drawn), argv  # messages wrap where the terminal does
        if argv[0] != "doctor":
            assert "wide01" in res.output or argv[0] == "show"
            assert "docker:runsc" in res.output


def test_a_table_rich_would_cut_at_80_columns_keeps_its_layout_without_its_least_columns():
    """A real run's density table (quickstart here): the sum of its widest words fits 80
    columns, yet Rich's layout cut a CI to `0.00879-0.01…`; it stays a table, without
    its least needed columns (said under it), every value whole."""
    import io

    from rich.console import Console
    from rich.table import Table

    from virtbench.report.cells import add_columns
    from virtbench.report.narrow import fit

    t = Table(title="density — run fit7ni", title_justify="left")
    add_columns(t, ["measure", "runtime", "median", "95% CI", "CV", "n"], ("measure", "runtime"))
    rows = [
        ("cgroup_memory", "native", "0.367 MiB", "0.25-0.5", "34.2%", "30"),
        ("cgroup_memory", "runc", "0.787 MiB", "0.699-0.842", "15.6%", "30"),
        ("cgroup_memory", "crun", "0.25 MiB", "0.246-0.25", "41.5%", "30"),
        ("launch", "native", "2.15 ms", "1.95-2.21", "181.7%", "30"),
        ("launch", "runc", "36.3 ms", "33.8-41.8", "40.8%", "30"),
        ("launch", "crun", "14.5 ms", "12.3-19.6", "73.5%", "30"),
        ("pss", "native", "0.0117 MiB", "0.0112-0.0122", "29.8%", "30"),
        ("pss", "runc", "0.0112 MiB", "0.00879-0.0117", "31.3%", "30"),
        ("pss", "crun", "0.0117 MiB", "0.0103-0.0117", "26.4%", "30"),
        ("reached", "native", "30 instances", "- (1 unit)", "-", "1"),
        ("reached", "runc", "30 instances", "- (1 unit)", "-", "1"),
        ("reached", "crun", "30 instances", "- (1 unit)", "-", "1"),
        ("teardown_per_instance", "native", "1.74 ms", "- (1 unit)", "-", "1"),
        ("teardown_per_instance", "runc", "113 ms", "- (1 unit)", "-", "1"),
        ("teardown_per_instance", "crun", "20 ms", "- (1 unit)", "-", "1"),
    ]
    for row in rows:
        t.add_row(*row)
    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(fit(t, console))
    text = console.file.getvalue()
    assert "…" not in text and "0.00879-0.0117" in text, text
    lines = text.splitlines()
    assert all(len(ln) <= 80 for ln in lines), text
    # still a table: its header row, its rules; the columns left out named under it
    assert any("┃ measure" in ln and "95% CI" in ln for ln in lines), text
    assert "left out at this width: n " in text and "┃ n" not in text
    assert all(c in text for c in ("CV", "34.2%")), "only what had to go is left out"
    wide = Console(width=120, file=io.StringIO(), color_system=None)
    assert fit(t, wide) is t  # where it fits whole, the table itself


def test_reading_commands_create_no_store_and_a_closed_pipe_ends_quietly(tmp_path):
    """list, show, compare, report, export and site of a directory without a store: the
    same one line in each, naming the directory tried and how to point at another, exit
    2, and no store created there; --results before the command is the same option."""
    empty = tmp_path / "nothing"
    said = f"no results store in {empty} (no virtbench.sqlite there): point at the directory"
    for argv in (
        ["list"],
        ["show", "abc123"],
        ["compare", "a", "b"],
        ["export", "abc123"],
        ["report", "abc123", "-o", str(tmp_path / "r.html")],
        ["site", str(tmp_path / "site")],
    ):
        for where in ([*argv, "--results", str(empty)], ["--results", str(empty), *argv]):
            res = runner.invoke(app, where)
            assert res.exit_code == 2 and said in " ".join(res.output.split()), (where, res.output)
            assert "--results DIR" in res.output and not empty.exists()


def test_the_module_runs_as_the_command():
    """`python -m virtbench.cli` is the command (the integration tests start runs so)."""
    import subprocess
    import sys

    from virtbench import __version__

    res = subprocess.run(
        [sys.executable, "-m", "virtbench.cli", "version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0 and res.stdout.strip() == __version__, res


def test_doctor_says_what_the_sandboxes_without_a_driver_need_and_where_they_come_from(
    tmp_path, monkeypatch
):
    from virtbench.host import doctor

    monkeypatch.setenv("PATH", str(tmp_path))
    lines = {c.name: c for c in doctor.elsewhere_checks()}
    assert set(lines) == {"runtime kata", "runtime krun", "runtime microsandbox"}
    for c in lines.values():
        assert c.status == "info" and c.detail.startswith("not installed; ")
        assert "it needs KVM" in c.detail and "it comes from " in c.detail
    (tmp_path / "krun").write_text("#!/bin/sh\n")
    (tmp_path / "krun").chmod(0o755)
    krun = next(c for c in doctor.elsewhere_checks() if c.name == "runtime krun")
    assert krun.detail.startswith(f"{tmp_path / 'krun'} is here, but virtbench has no driver")


@pytest.mark.parametrize("width", [80, 200])
def test_doctor_never_cuts_a_word_or_url(width):
    """A fix naming a long URL: at 80 columns each check's words go under its line, the URL
    whole on a line; at 200 the table keeps its columns. Every word of every check is
    shown whole."""
    import io

    from rich.console import Console

    from virtbench.cli.host import _doctor_table

    url = "github.com/firecracker-microvm/firecracker/releases"
    rows = [
        ("ok", "runtime crun", "available, version 1.8.1", ""),
        (
            "fail",
            "runtime firecracker",
            "firecracker not on PATH",
            f"download a release from {url}",
        ),
    ]
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(_doctor_table(rows, width))
    text = console.file.getvalue()
    words = " ".join(r[2] + " fix: " + r[3] for r in rows).split()
    shown = text.split()
    assert all(w in shown for w in words), text
    assert any(ln.strip().startswith("fail") and "firecracker" in ln for ln in text.splitlines())
    assert all(len(ln.rstrip()) <= width for ln in text.splitlines())


def test_a_table_s_notes_span_the_terminal_not_the_table(tmp_path, monkeypatch):
    """At 200 columns a narrow table's caption (the memory costs' note) is one long line
    under it, not wrapped at the table's ~90 columns."""
    from tests.fakerun import fake_run

    from virtbench.store import Store

    fake_run(Store(tmp_path), "note01", {"runc": 1.0, "crun": 1.1}, ("density",))
    monkeypatch.setenv("COLUMNS", "200")
    res = runner.invoke(app, ["show", "note01", "--results", str(tmp_path)])
    assert res.exit_code == 0, res.output
    note = next(ln for ln in res.output.splitlines() if ln.startswith("per instance: the slope"))
    assert len(note) > 150, note
