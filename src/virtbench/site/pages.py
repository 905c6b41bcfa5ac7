"""The site's pages beyond each run's report: the index of testbeds, a testbed's
leaderboards (each entry's latest completed run's answers, as the report gives them) and
an entry's trends. Made from the run files already on disk, so a run that did not change
is never worked out again; every link is relative and names its file (index.html), so
the site reads the same from file:// and from any static host."""

from __future__ import annotations

import datetime as dt
import posixpath
from typing import Any
from urllib.parse import quote

import jinja2

from virtbench import __version__
from virtbench.site import trend
from virtbench.site.plan import Entry, Plan, Run, Testbed

INDEX = "index.html"


def testbed_dir(t: str) -> str:
    return f"tb/{t}"


def entry_dir(e: Entry) -> str:
    return f"tb/{e.testbed}/{e.slug}"


def run_page(run: str) -> str:
    return f"runs/{run}.html"


def href(target: str, page: str) -> str:
    """`target` (a path from the site's root) as a link from `page` (another)."""
    return quote(posixpath.relpath(target, posixpath.dirname(page) or "."))


def when(t: float | None) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M") if t else "n/a"


def _env() -> jinja2.Environment:
    loader = jinja2.ChoiceLoader(
        [
            jinja2.PackageLoader("virtbench.site", "templates"),
            jinja2.PackageLoader("virtbench.report", "templates"),
        ]
    )
    env = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined)
    env.globals.update(version=__version__, when=when)
    return env


ENV = _env()


def run_links(run: Run, describe: str) -> list[tuple[str, str]]:
    """The links above a run's report: back to the site, and to its files."""
    page = run_page(run.id)
    e = f"{testbed_dir(run.testbed)}/{run.entry}/{INDEX}"
    return [
        ("all testbeds", href(INDEX, page)),
        (f"testbed: {describe}", href(f"{testbed_dir(run.testbed)}/{INDEX}", page)),
        (f"{run.record.name}: every run", href(e, page)),
        ("JSON", href(f"runs/{run.id}.json", page)),
        ("Bencher (BMF)", href(f"runs/{run.id}.bmf.json", page)),
    ]


def index(p: Plan, parts: dict[str, list[dict[str, Any]]], docs: dict[str, Any]) -> str:
    """The testbeds, and per testbed its entries: their latest run, what its first
    answer says and what compare flagged against the run before it."""
    page = INDEX
    beds = []
    for t in p.testbeds:
        entries = []
        for e in t.entries:
            last = e.latest
            mine = parts.get(last.id) if last else None
            first = mine[0] if mine else None
            entries.append(
                {
                    "name": e.name + (f" on {e.host}" if e.host else ""),
                    "href": href(f"{entry_dir(e)}/{INDEX}", page),
                    "runs": len(e.runs),
                    "last": None if last is None else _run_row(last, page),
                    "first": first,
                    "flags": trend.flagged(docs[last.id]) if last else {},
                    "against": _against(docs[last.id]) if last else "",
                }
            )
        beds.append(
            {
                "id": t.id,
                "describe": t.describe,
                "href": href(f"{testbed_dir(t.id)}/{INDEX}", page),
                "runs": sum(len(e.runs) for e in t.entries),
                "last": max(r.record.created for e in t.entries for r in e.runs),
                "entries": entries,
            }
        )
    return ENV.get_template("index.html.j2").render(
        testbeds=beds, running=p.running, schema=href("schema/site.schema.json", page)
    )


def testbed_page(t: Testbed, parts: dict[str, list[dict[str, Any]]]) -> str:
    """The testbed's leaderboards: per entry, its latest completed run's answers
    (`parts`: each run's answers as the report shows them)."""
    page = f"{testbed_dir(t.id)}/{INDEX}"
    entries = []
    for e in t.entries:
        last = e.latest
        entries.append(
            {
                "name": e.name,
                "host": e.host,
                "runs": len(e.runs),
                "trend": href(f"{entry_dir(e)}/{INDEX}", page),
                "latest_json": href(f"{entry_dir(e)}/latest.json", page),
                "last": None if last is None else _run_row(last, page),
                "answers": parts.get(last.id, []) if last else [],
                "runtimes": last.record.spec.get("runtimes", []) if last else [],
            }
        )
    return ENV.get_template("testbed.html.j2").render(
        testbed=t, entries=entries, index=href(INDEX, page)
    )


def _run_row(r: Run, page: str) -> dict[str, Any]:
    return {
        "id": r.id,
        "created": r.record.created,
        "status": r.record.status,
        "report": href(run_page(r.id), page),
        "json": href(f"runs/{r.id}.json", page),
    }


def _against(doc: dict[str, Any]) -> str:
    """What the run was compared with, or why it was not."""
    prev = doc.get("previous")
    if prev is None:
        if doc.get("testbed", {}).get("id"):
            return "no completed run before it"
        return "not compared: no machine facts"
    if prev.get("none"):
        return f"not compared with {prev['run']}: {prev['none']}"
    return f"against {prev['run']}"


def entry_page(
    t: Testbed,
    e: Entry,
    docs: dict[str, dict[str, Any]],
    parts: dict[str, list[dict[str, Any]]],
) -> str:
    """The entry's answers (its latest completed run's, `parts` as in testbed_page), its
    runs (newest first) and the trend of every headline figure over its completed ones."""
    page = f"{entry_dir(e)}/{INDEX}"
    done = [r.id for r in e.completed]
    place = {run: i for i, run in enumerate(done)}
    series = trend.series([docs[r] for r in done])
    figures: dict[str, list[dict[str, Any]]] = {}
    for s in series:
        run, value, span = trend.latest(s)
        row = {"s": s, "run": run, "value": value, "span": span}
        figures.setdefault(s.figure, []).append(row | {"svg": trend.svg(s, len(done), place)})
    runs = []
    for r in reversed(e.runs):
        row = _run_row(r, page)
        doc = docs.get(r.id, {})
        flags = trend.flagged(doc) if doc else {}
        runs.append({**row, "flags": flags, "against": _against(doc), "rest": trend.unflagged(doc)})
        runs[-1]["samples"] = doc.get("counts")
    last = e.latest
    return ENV.get_template("entry.html.j2").render(
        testbed=t,
        entry=e,
        answers=parts.get(last.id, []) if last else [],
        last=None if last is None else _run_row(last, page),
        runs=runs,
        figures=figures,
        unrecorded=e.testbed == "unrecorded",
        index=href(INDEX, page),
        tb=href(f"{testbed_dir(t.id)}/{INDEX}", page),
        latest_json=href(f"{entry_dir(e)}/latest.json", page),
    )
