"""A group of fewer than 5 independent units has no CI: its range is shown instead, and
never under a "95% CI" label. Every output is rendered from runs whose groups have 3
units (and a table where one runtime has 3, another 8): the terminal's tables, wide and
stacked, `show`, `compare` (its table, --markdown and --json), the NDJSON and CSV exports
and the HTML report; no "95% CI" stands before a range in any of them, and the word
"range" names the ranges shown."""

from __future__ import annotations

import html
import io
import json
import re
import time

import pytest
from rich.console import Console
from tests.fakerun import fake_run
from typer.testing import CliRunner

from virtbench.cli import app
from virtbench.report.narrow import fit
from virtbench.report.sections import experiment_tables
from virtbench.store import Sample, Store

runner = CliRunner()
ALL = ("boot", "density", "throughput", "scalability", "isolation")
# a range cell as virtbench writes it: "8.24-9.96 (of 3)", "1-9.2 (of 9 in 3 units)" (and
# as it used to: "8.24-9.96 (range of 3)")
RANGE = r"\S+-\S+(?: [A-Za-z/%]+)? \((?:range )?of \d"
CI_THEN_RANGE = re.compile(r"95% CI[\s│┃|:]*" + RANGE)
A_RANGE = re.compile(RANGE)


def mixed_run(store: Store, run_id: str) -> str:
    """A boot run where `few` has 3 repetitions (no CI: the range) and `many` 8 (a CI)."""
    spec = {"name": "mixed", "runtimes": ["few", "many"], "experiment": [{"type": "boot"}]}
    store.create_run(run_id, "mixed", ["virtbench", "run", "mixed"], spec)
    t0 = time.time()
    for runtime, reps, base in (("few", 3, 8.0), ("many", 8, 20.0)):
        for rep in range(reps):
            for metric, value in (
                ("boot.spawn_to_exit", base + rep * 0.7),
                ("boot.teardown", base / 4 + rep * 0.1),
            ):
                store.add_sample(
                    run_id,
                    Sample(
                        experiment="boot",
                        metric=metric,
                        value=value,
                        unit="ms",
                        direction="lower",
                        runtime=runtime,
                        workload="hello",
                        repetition=rep,
                        t=t0 + rep,
                        params={"network": "none"},
                    ),
                )
    store.finish_run(run_id, "completed")
    return run_id


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("range-words")
    store = Store(path)
    fake_run(store, "few001", {"native": 1.0, "crun": 1.1}, ALL, n=3)  # 3 units a group
    mixed_run(store, "mix001")
    store.close()
    return path


def labelled_wrongly(text: str) -> list[str]:
    """Every range in `text` with a "95% CI" before it, and every range outside a drawn
    table (a stacked one, a line of prose) that no "range" names, in its cell or as its
    header (a drawn table's columns: `drawn_columns`)."""
    wrong = [m.group(0) for m in CI_THEN_RANGE.finditer(text)]
    for line in text.splitlines():
        if "│" in line:
            continue
        for m in A_RANGE.finditer(line):
            if not line[: m.start()].endswith("range "):
                wrong.append(m.group(0))
    return wrong


def drawn_columns(text: str) -> list[tuple[str, str]]:
    """(header, cell text) of every cell of every table drawn in `text` (Rich's boxes:
    headers between ┃, cells between │; a header wrapped over lines is joined)."""
    pairs: list[tuple[str, str]] = []
    headers: list[str] = []
    in_head = False
    for line in text.splitlines():
        if "┃" in line:
            parts = [p.strip() for p in line.split("┃")[1:-1]]
            if not in_head:
                headers = parts
            else:
                headers = [f"{h} {p}".strip() for h, p in zip(headers, parts, strict=False)]
            in_head = True
            continue
        in_head = False
        if line.count("│") >= 2 and headers:
            cells = [c.strip() for c in line.split("│")[1:-1]]
            pairs += list(zip(headers, cells, strict=False))
    return pairs


def ranges_under_ci(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Cells of a column headed "95% CI" that hold (a piece of) a range."""
    return [
        (h, c) for h, c in pairs if "95% CI" in h and re.search(r"\((?:range )?of\b|^range\b", c)
    ]


def check_text(text: str) -> None:
    assert not labelled_wrongly(text), (labelled_wrongly(text), text)
    assert not ranges_under_ci(drawn_columns(text)), (ranges_under_ci(drawn_columns(text)), text)


def no_ci_keys(data: object) -> None:
    """No JSON field named as a CI (ci, ci_low, ci_high, ...) anywhere in `data`."""
    if isinstance(data, dict):
        for k, v in data.items():
            assert not re.search(r"(^|_)ci(_|$)|95% CI", str(k), re.I), k
            no_ci_keys(v)
    elif isinstance(data, list):
        for v in data:
            no_ci_keys(v)


def test_tables_name_a_range_range_wide_and_narrow(store_dir):
    """Every table of both runs, as Rich objects and drawn at 60 and 200 columns: no range
    under "95% CI"; a column of ranges only is headed "range", a column of both
    "interval" with each cell naming its own."""
    store = Store(store_dir)
    headers: set[str] = set()
    pairs: list[tuple[str, str]] = []
    for run_id in ("few001", "mix001"):
        run, frame = store.run(run_id), store.frame(run_id)
        for wide in (False, True):
            for t in experiment_tables(run, frame, wide=wide):
                for col in t.columns:
                    headers.add(str(col.header))
                    cells = [str(c) for c in col.cells]
                    pairs += [(str(col.header), c) for c in cells]
                    assert not ranges_under_ci([(str(col.header), c) for c in cells])
                for width in (60, 200):
                    console = Console(width=width, file=io.StringIO(), color_system=None)
                    console.print(fit(t, console))
                    text = console.file.getvalue()  # type: ignore[attr-defined]
                    check_text(text)
                    lines = text.splitlines()
                    assert all(len(ln) <= width for ln in lines) and "…" not in text, text
    assert "range" in headers and "interval" in headers and "95% CI" in headers
    assert any(h == "range" and re.fullmatch(r"\S+-\S+ ms \(of 3\)", c) for h, c in pairs)
    # the mixed table: each cell names what it holds
    assert ("interval", "range 8-9.4 ms (of 3)") in pairs, pairs
    assert any(h == "interval" and c.startswith("95% CI ") for h, c in pairs)
    # isolation: no slowdown of 3 units has a CI, and its header does not promise one
    assert any(h == "slowdown" and c.startswith("+") for h, c in pairs)
    assert not any(h.endswith("slowdown (95% CI)") for h in headers)
    store.close()


@pytest.mark.parametrize("columns", ["60", "200"])
def test_show_never_puts_a_ci_label_before_a_range(store_dir, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    for run_id in ("few001", "mix001"):
        for wide in ([], ["--wide"]):
            res = runner.invoke(app, ["show", run_id, *wide, "--results", str(store_dir)])
            assert res.exit_code == 0, res.output
            check_text(res.output)
            assert "range" in res.output


def test_compare_markdown_json_and_exports_carry_no_ci_of_a_range(store_dir, tmp_path):
    where = ["--results", str(store_dir)]
    md, js = tmp_path / "v.md", tmp_path / "v.json"
    for argv in (
        ["compare", "mix001", "--runtimes", "few,many"],
        ["compare", "few001", "--runtimes", "native,crun"],
    ):
        res = runner.invoke(app, [*argv, "--markdown", str(md), "--json", str(js), *where])
        assert res.exit_code in (0, 1, 3), res.output
        check_text(res.output)
        check_text(md.read_text())
        no_ci_keys(json.loads(js.read_text()))
    for run_id in ("few001", "mix001"):
        nd = tmp_path / f"{run_id}.ndjson"
        res = runner.invoke(app, ["export", run_id, "-o", str(nd), *where])
        assert res.exit_code == 0, res.output
        for line in nd.read_text().splitlines():
            no_ci_keys(json.loads(line))
        csv = tmp_path / f"{run_id}.csv"
        res = runner.invoke(app, ["export", run_id, "--format", "csv", "-o", str(csv), *where])
        assert res.exit_code == 0 and not re.search(r"(^|[,_])ci([,_]|$)", csv.read_text())


def test_the_report_heads_a_range_range(store_dir, tmp_path):
    out = tmp_path / "r.html"
    res = runner.invoke(
        app,
        [
            "report",
            "few001",
            "mix001",
            "-o",
            str(out),
            "--results",
            str(store_dir),
            "--plots",
            str(tmp_path / "p"),
        ],
    )
    assert res.exit_code == 0, res.output
    page = re.sub(r"<svg.*?</svg>", "", out.read_text(), flags=re.S)  # the plots aside
    pairs = []
    for table in re.findall(r"<table.*?</table>", page, re.S):
        heads = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", table, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", table, re.S):
            cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            if heads and len(cells) == len(heads):
                pairs += list(zip(heads, cells, strict=True))
    assert not ranges_under_ci(pairs)
    assert any(h == "range" and re.fullmatch(r"\S+-\S+ ms \(of 3\)", c) for h, c in pairs)
    assert ("interval", "range 8-9.4 ms (of 3)") in pairs  # beside many's CI
    assert any(h == "interval" and c.startswith("95% CI ") for h, c in pairs)
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    assert not CI_THEN_RANGE.search(text)
