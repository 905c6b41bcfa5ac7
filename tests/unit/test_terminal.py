"""`show` and `compare` as a person sees them in a terminal of 80 and of 200 columns: no
line longer than the terminal, no value cut to an ellipsis, no word broken across lines
(every word drawn at 80 columns is one drawn at 200), tables kept as tables, and no
internal id where a label is meant."""

from __future__ import annotations

import re

import pytest
from tests.fakerun import fake_run
from typer.testing import CliRunner

from virtbench.cli import app
from virtbench.store import Store

runner = CliRunner()
ALL = ("boot", "density", "throughput", "scalability", "isolation")
BOX = "│┃┏┓┗┛┡┩┣┫━─┼╇╋┳┻└┘┌┐├┤┯┷"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    path = tmp_path_factory.mktemp("terminal")
    store = Store(path)
    fake_run(store, "tty001", {"native": 1.0, "crun": 1.3, "runsc": 2.0}, ALL, n=8)
    fake_run(store, "tty002", {"native": 1.0, "crun": 1.4, "runsc": 2.1}, ALL, n=8, seed=2)
    store.close()
    return path


def drawn(results, columns: int, *argv: str) -> str:
    res = runner.invoke(app, [*argv, "--results", str(results)], env={"COLUMNS": str(columns)})
    assert res.exit_code in (0, 1), res.output
    return res.output


def words(text: str) -> set[str]:
    return set(re.sub(f"[{BOX}]", " ", text).split())


def test_words_are_never_broken_by_the_words_the_check_sees():
    """The check can fail: a word broken across lines makes two words never drawn whole."""
    assert not words("toget\nher") <= words("together")
    assert words("a b\nc") <= words("a b c")


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "tty001"],
        ["show", "tty001", "--wide"],
        ["compare", "tty001", "tty002"],
        ["compare", "tty001", "--runtimes", "crun,runsc"],
    ],
)
def test_show_and_compare_fit_80_and_200_columns_whole(results, argv):
    wide = drawn(results, 200, *argv)
    narrow = drawn(results, 80, *argv)
    for text, width in ((narrow, 80), (wide, 200)):
        lines = text.splitlines()
        assert max(len(ln) for ln in lines) <= width, [ln for ln in lines if len(ln) > width]
        assert "…" not in text
        assert "┃" in text and "━" in text  # tables stay tables, never stacked cards
    broken = words(narrow) - words(wide)
    said = set(" ".join(ln for ln in narrow.splitlines() if ln.startswith("left out")).split())
    assert broken <= said, sorted(broken - said)  # only the note on left-out columns is new
    # labels, not ids: the figures read as words
    assert "spawn_to_exit" not in narrow and "host_cost" not in narrow
    assert "time to run and exit" in " ".join(narrow.split())


def test_show_ids_names_figures_by_their_ids(results):
    text = drawn(results, 200, "show", "tty001", "--ids")
    assert "boot.spawn_to_exit" in text and "[boot.spawn_to_exit]" in text


def test_show_leads_with_answers_that_say_by_how_much(results):
    text = " ".join(drawn(results, 80, "show", "tty001").split())
    first = text.index("Fastest to start")
    assert first < text.index("boot — run tty001")  # the answer before the details
    assert re.search(r"native starts 1\.\d\dx \(1\.\d\d-1\.\d\d\) faster than crun", text) or (
        re.search(r"crun starts 1\.\d\dx \(1\.\d\d-1\.\d\d\) faster than runsc", text)
    ), text[:2000]
