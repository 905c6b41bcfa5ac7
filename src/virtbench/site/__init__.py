"""Every run of a store as a static site (`virtbench site DIR`), readable from file://
and from any static host, with no server:

    index.html                       the testbeds (site/plan.py: a machine's fingerprint)
    tb/TESTBED/index.html            per entry (a spec's name; a fleet host's own), the
                                     leaderboards of its latest completed run
    tb/TESTBED/ENTRY/index.html      its runs, and each headline figure's trend per runtime
    tb/TESTBED/ENTRY/latest.json     its latest completed run's file, for machines
    runs/ID.html                     the run's report, as `virtbench report` writes it
    runs/ID.json, runs/ID.bmf.json   its figures (site/data.py), and as Bencher reads them
    schema/site.schema.json          the JSON files' schema

Incremental: a run's files are made again only when their digest changed (the run, its
samples, where it is placed, the run it is compared with, the format); every other page is
made from the run files on disk and written only when its text changed; files of runs
that left the store are removed. A second build of an unchanged store writes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from virtbench.site import pages, work
from virtbench.site.data import dumps
from virtbench.site.files import Files
from virtbench.site.plan import Plan, Run, plan
from virtbench.site.schema import schema_text
from virtbench.store import Store

PARTS = ".virtbench-site/answers"  # each run's answers as the report shows them


@dataclass
class Built:
    runs: int  # runs on the site
    made: list[str] = field(default_factory=list)  # runs whose files were made
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    testbeds: int = 0
    running: int = 0


def run_files(run: str) -> dict[str, str]:
    return {
        "report": pages.run_page(run),
        "json": f"runs/{run}.json",
        "bmf": f"runs/{run}.bmf.json",
        "parts": f"{PARTS}/{run}.json",
    }


def build(store: Store, location: str | Path, root: Path, jobs: int = 1) -> Built:
    """Build (or bring up to date) the site of `store` in `root`; `location` is where
    worker processes open the store (its directory, or its URL with the password)."""
    runs = store.runs()
    prints = {r.id: _samples(store, r.id) for r in runs if r.status != "running"}
    site = plan(runs, prints)
    files = Files(root)
    describe = {t.id: t.describe for t in site.testbeds}
    todo = [r for r in site.runs if not _fresh(files, r)]
    tasks = [work.task_of(r, pages.run_links(r, describe[r.testbed])) for r in todo]
    digests = {r.id: r.digest for r in todo}
    try:
        for m in work.made(store, location, tasks, jobs):
            _write_run(files, m, digests[m.run])
        _write_pages(files, site, root)
        files.write("schema/site.schema.json", schema_text())
    except BaseException:
        files.stopped()
        raise
    files.finish()
    return Built(
        len(site.runs),
        [r.id for r in todo],
        files.written,
        files.removed,
        len(site.testbeds),
        site.running,
    )


def _samples(store: Store, run: str) -> str:
    """What changes whenever the run's samples do: first and last id, and how many."""
    return f"{store.samples_fingerprint(run)}:{store.count_samples(run)}"


def _fresh(files: Files, run: Run) -> bool:
    return all([files.fresh(p, run.digest) for p in run_files(run.id).values()])


def _write_run(files: Files, m: work.Made, digest: str) -> None:
    paths = run_files(m.run)
    files.write(paths["report"], m.report, digest)
    files.write(paths["json"], m.json, digest)
    files.write(paths["bmf"], m.bmf, digest)
    files.write(paths["parts"], m.parts, digest)


def _write_pages(files: Files, site: Plan, root: Path) -> None:
    """The index, each testbed's leaderboards, each entry's trends and latest.json, from
    the run files on disk."""
    docs = {r.id: _read(root / run_files(r.id)["json"]) for r in site.runs}
    latest = [e.latest for t in site.testbeds for e in t.entries if e.latest]
    parts = {r.id: _read(root / run_files(r.id)["parts"])["answers"] for r in latest}
    files.write(pages.INDEX, pages.index(site, parts, docs))
    for t in site.testbeds:
        files.write(f"{pages.testbed_dir(t.id)}/{pages.INDEX}", pages.testbed_page(t, parts))
        for e in t.entries:
            folder = pages.entry_dir(e)
            files.write(f"{folder}/{pages.INDEX}", pages.entry_page(t, e, docs, parts))
            if e.latest:
                doc = {**docs[e.latest.id], "kind": "latest"}
                doc["$schema"] = "../../../schema/site.schema.json"
                doc["entry"] = {"name": e.name, "host": e.host, "testbed": t.id}
                files.write(f"{folder}/latest.json", dumps(doc))


def _read(path: Path) -> Any:
    return json.loads(path.read_text())
