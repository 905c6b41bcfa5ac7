"""`virtbench catalog`: every entry listed with its estimate, grouped as a reader looks
for things, each line within the terminal with every word whole, and what the host lacks
said once below the entries it concerns."""

from __future__ import annotations

import re

import pytest
from tests.catalogs import STUDIES, listing
from typer.testing import CliRunner

from virtbench import spec as specmod
from virtbench.cli import app


def test_run_help_points_to_the_catalog_which_lists_every_entry_with_its_estimate(tmp_path):
    res = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "100"})
    assert "virtbench catalog" in res.output
    res = CliRunner().invoke(app, ["catalog", "--results", str(tmp_path)])
    assert res.exit_code == 0, res.output
    _, lines, _ = listing(res.output)
    assert sorted(lines) == specmod.catalog_names(), res.output  # each entry, one line
    for line in lines.values():  # its estimate here, or why not at all
        assert ("(estimate here: " in line) != ("(cannot run here: " in line), line
        assert "estimate here:" not in line or "; --quick: " in line, line
    assert not (tmp_path / "virtbench.sqlite").exists()  # reading never creates a store
    res = CliRunner().invoke(app, ["catalog", "uk_ng_s", "--results", str(tmp_path)])
    assert res.exit_code == 0 and "s1-docker-unikraft" in res.output and "quick" in res.output
    res = CliRunner().invoke(app, ["catalog", "nosuch"])
    assert res.exit_code == 2 and "nosuch: no such catalog entry" in res.output


def test_the_catalog_is_grouped_as_a_reader_looks_for_things(tmp_path):
    """quickstart first; then the studies, S1's parts under their code names, the sandbox
    questions and one experiment type at a time, each group under its heading; every
    entry in a group of its own (none left to "More entries")."""
    from virtbench.cli import catalog_list

    res = CliRunner().invoke(app, ["catalog", "--results", str(tmp_path)])
    assert res.exit_code == 0, res.output
    groups, lines, _ = listing(res.output)
    assert list(groups) == [
        "Start here",
        "The five studies",
        "S1's experiments under their own names",
        "Sandbox questions",
        "One experiment type at a time",
    ]
    assert next(iter(lines)) == "quickstart"
    by_group: dict[str, list[str]] = {}
    for e in catalog_list.entries():
        by_group.setdefault(e.group, []).append(e.name)
    assert groups == by_group  # each entry under the heading of its group, in its order
    s1 = specmod.load("s1-docker-unikraft")[0]
    assert by_group[catalog_list.START] == ["quickstart"]
    assert by_group[catalog_list.STUDIES] == STUDIES
    assert by_group[catalog_list.PARTS] == s1.aliases  # in the study's order: uk_boot, d_boot
    assert by_group[catalog_list.SANDBOX] == ["sandbox", "burst", "pods"]
    assert by_group[catalog_list.TYPES][:2] == ["boot", "density"]


@pytest.mark.parametrize("columns", [80, 200])
def test_catalog_lines_fit_the_terminal_and_keep_every_word_whole(columns, tmp_path):
    """Each line within the terminal's width, wrapped at spaces: every entry's summary
    (its description's first sentence) is in its line word for word, none cut (S1's
    scalability entry was cut to `--worker nginx|redis|sqlite|.`)."""
    from virtbench.cli import catalog_list

    where = ["--results", str(tmp_path)]
    res = CliRunner().invoke(app, ["catalog", *where], env={"COLUMNS": str(columns)})
    assert res.exit_code == 0, res.output
    widths = [len(line) for line in res.output.splitlines()]
    assert max(widths) <= columns and (columns == 80 or max(widths) > 100), res.output
    _, lines, _ = listing(res.output)
    for e in catalog_list.entries():
        assert f"{e.name} — {' '.join(e.summary.split())} (" in lines[e.name]
    scale = next(e for e in catalog_list.entries() if e.name == "scalability")
    assert "--worker nginx|redis|sqlite|... for a workload" in scale.summary
    assert scale.summary.endswith("--step and --max for the pile-up.")
    res = CliRunner().invoke(app, ["catalog", "scalability", *where], env={"COLUMNS": str(columns)})
    assert " ".join(scale.spec.description.split()) in " ".join(res.output.split())


def test_a_refusal_is_said_once_below_the_listing_with_the_entries_it_concerns(
    tmp_path, monkeypatch
):
    """A host without docker whose qemu cannot boot a Linux guest: each reason is said
    once, below the entries, with every entry it concerns; each entry's line marks it
    once (its runtimes or parts it costs), never repeating the reason."""
    from virtbench.runtimes.base import Availability
    from virtbench.spec.resolved import RuntimePlan

    gone, guest = "GONE: no docker daemon here", "GUEST: no Linux guest boots here"

    def available(self):
        here = self.driver != "docker"
        return Availability(here, version="1" if here else "", reason="" if here else gone)

    def cannot_run(self, workload):
        return guest if self.driver == "qemu" and workload not in ("hello", "sleep") else None

    monkeypatch.setattr(RuntimePlan, "available", available)
    monkeypatch.setattr(RuntimePlan, "cannot_run", cannot_run)
    res = CliRunner().invoke(app, ["catalog", "--results", str(tmp_path)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert res.output.count("GONE") == 1 and res.output.count("GUEST") == 1, res.output
    _, lines, notes = listing(res.output)
    said = dict(re.findall(r"\[(\d+)\] ([^\[]*)", notes))  # note number -> its text
    for subject, reason in (("docker", gone), ("qemu", guest)):
        (n,) = [n for n, text in said.items() if text.startswith(f"{subject}: {reason}.")]
        concerned = [name for name, line in lines.items() if f" [{n}]" in line]
        assert concerned and said[n].strip().endswith(f"Concerns: {', '.join(concerned)}.")
    docker = {
        n
        for n in specmod.catalog_names()
        if any(r.split(":")[0] == "docker" for r in specmod.load(n)[0].runtimes)
    }
    assert {n for n, line in lines.items() if "docker [" in line} == docker
    assert "(cannot run here: docker [" in lines["d_boot"]  # every one of its runtimes
    assert "(cannot run here: qemu's scalability (nginx) [" in lines["uk_ng_s"]
    s1_lost = "qemu's scalability (nginx, redis, sqlite), isolation (nginx, redis, sqlite) ["
    assert s1_lost in lines["s1-docker-unikraft"]
    assert "estimate here:" in lines["uk_boot"] and "[" not in lines["uk_boot"]
