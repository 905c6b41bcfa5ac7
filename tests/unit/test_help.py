"""What `virtbench --help` and `virtbench --version` show: each command's summary whole
(Click shortens a summary that does not fit to `...`), and the version."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from virtbench import __version__
from virtbench.cli import app

runner = CliRunner()


def test_version_option_prints_the_version_and_exits_0():
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0, res.output
    assert res.output == f"virtbench {__version__}\n"
    res = runner.invoke(app, ["--version", "catalog"])  # eager: before any command
    assert res.exit_code == 0 and res.output == f"virtbench {__version__}\n"


def test_the_console_script_says_its_version():
    """Through `main` (as the installed command runs: Click not in standalone mode)."""
    argv = [sys.executable, "-m", "virtbench.cli", "--version"]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout == f"virtbench {__version__}\n", res


def first_paragraph(help_text: str) -> str:
    """A command's help up to its first blank line, its words joined by single spaces."""
    return " ".join(help_text.split("\n\n", 1)[0].split())


def groups() -> list[tuple[list[str], typer.core.TyperGroup]]:
    """The command and its groups (fleet), each with the arguments that show its help."""
    root = typer.main.get_command(app)
    found = [([], root)]
    for name, cmd in root.commands.items():
        if hasattr(cmd, "commands"):
            found.append(([name], cmd))
    return found


@pytest.mark.parametrize("columns", [80, 200])
def test_no_command_summary_is_cut_in_the_help(columns):
    """`virtbench --help` and `virtbench fleet --help` at 80 and 200 columns: each command
    listed with its summary whole (its help's first paragraph, a sentence), none cut to
    `...` or `…`."""
    for argv, group in groups():
        # as a terminal of that width: Click formats help to it, up to 80 columns
        res = runner.invoke(app, [*argv, "--help"], env={"COLUMNS": str(columns)})
        assert res.exit_code == 0, res.output
        listed = res.output.split("Commands:", 1)[1]
        assert not any(ln.rstrip().endswith(("...", "…")) for ln in listed.splitlines()), listed
        shown = " ".join(listed.split())
        for name, cmd in group.commands.items():
            summary = first_paragraph(cmd.help or "")
            assert summary.endswith("."), (name, summary)
            assert f"{name} {summary}" in shown, (name, summary, listed)


def every_command() -> list[list[str]]:
    """The arguments that show each command's own help (fleet's subcommands included)."""
    found = []
    for argv, group in groups():
        found += [[*argv, name] for name in group.commands]
    return found


@pytest.mark.parametrize("columns", [80, 200])
def test_help_names_values_as_people_write_them_and_breaks_no_word(columns):
    """Every command's help: values named N, TEXT, DIR, URL... (never Python's `<int>`,
    `<list[str]>`, `x>=0`, `{A [B]}...`), ranges in words, and no line ends in a word or
    option cut at its hyphen."""
    for argv in every_command():
        res = runner.invoke(app, [*argv, "--help"], env={"COLUMNS": str(columns)})
        assert res.exit_code == 0, (argv, res.output)
        text = res.output
        assert "<" not in text and "{" not in text and ">=" not in text, (argv, text)
        cut = [ln for ln in text.splitlines() if ln.rstrip()[-2:-1].isalpha() and ln.endswith("-")]
        assert not cut, (argv, cut)
    compare = runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "80"}).output
    assert "compare [OPTIONS] A [B]\n" in compare
    assert "--results DIR" in compare and "--store URL" in compare
    assert "report [OPTIONS] RUN...\n" in runner.invoke(app, ["report", "--help"]).output
    keep = " ".join(runner.invoke(app, ["clean", "--help"]).output.split())
    assert "--keep N" in keep and "at least 0" in keep
