"""The docs hold what they show: every TOML block in README.md and docs/*.md is a spec
virtbench accepts, README.md stays short, and every relative link leads somewhere.

A block fenced ```toml is a whole spec: it must validate as it stands. A block fenced
```toml fragment is a part of one (a `[runtime.x]` table, one `[[experiment]]`): it is
put into a minimal whole spec and validated there. Paths a spec gives to files of the
reader's own (a VM's `kernel`, `initrd`, `disk`) that do not exist here stand for empty
files, which is all the spec checks of them.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from virtbench import spec
from virtbench.errors import SpecError

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, ROOT / "CONTRIBUTING.md", *DOCS]
MAX_README_LINES = 200

FENCE = re.compile(
    r"^(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S
)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
USER_FILES = ("kernel", "initrd", "disk")
# what a fragment lacks of a whole spec
MINIMAL = {"name": "docs-fragment", "runtimes": ["native"], "experiment": [{"type": "boot"}]}


def blocks(path: Path) -> list[tuple[str, int, str]]:
    """(info string, line number, body) of every fenced code block in `path`."""
    text = path.read_text(encoding="utf-8")
    return [
        (m["info"].strip(), text.count("\n", 0, m.start()) + 1, m["body"])
        for m in FENCE.finditer(text)
    ]


def toml_blocks() -> list[tuple[str, str, str]]:
    """(where, kind, body) of every ```toml block: kind "whole" or "fragment"."""
    found = []
    for path in [README, *DOCS]:
        for info, line, body in blocks(path):
            words = info.split()
            if not words or words[0] != "toml":
                continue
            kind = "fragment" if "fragment" in words[1:] else "whole"
            found.append((f"{path.relative_to(ROOT)}:{line}", kind, body))
    return found


TOML = toml_blocks()


def whole(data: dict, kind: str) -> dict:
    """The spec a block stands for: itself, or a fragment inside a minimal spec."""
    if kind == "whole":
        return data
    out = {**MINIMAL, **data}
    named = [k for k, t in data.get("runtime", {}).items() if "driver" in t]
    if named and "runtimes" not in data:  # a named runtime is used, as a spec would
        out["runtimes"] = named
    return out


def stand_ins(data: dict, tmp: Path) -> dict:
    """`data` with each [runtime.X] file of the reader's own that is not here replaced by
    an empty file under `tmp`."""
    tables = {}
    for label, table in data.get("runtime", {}).items():
        table = dict(table)
        for key in USER_FILES:
            value = table.get(key)
            if isinstance(value, str) and not Path(value).is_file():
                stand_in = tmp / label / Path(value).name
                stand_in.parent.mkdir(parents=True, exist_ok=True)
                stand_in.write_bytes(b"")
                table[key] = str(stand_in)
        tables[label] = table
    return {**data, "runtime": tables} if tables else data


def test_the_docs_hold_toml_blocks_of_both_kinds():
    assert len(DOCS) >= 7, [p.name for p in DOCS]
    assert len(TOML) >= 8, TOML
    assert any(where.startswith("README.md") for where, _, _ in TOML)
    assert sum(kind == "whole" for _, kind, _ in TOML) >= 6
    assert sum(kind == "fragment" for _, kind, _ in TOML) >= 2


@pytest.mark.parametrize(("where", "kind", "body"), TOML, ids=[w for w, _, _ in TOML])
def test_every_toml_block_is_a_valid_spec(where, kind, body, tmp_path):
    try:
        data = tomllib.loads(body)
    except tomllib.TOMLDecodeError as exc:
        pytest.fail(f"{where}: not TOML: {exc}")
    parsed = spec.parse(stand_ins(whole(data, kind), tmp_path), where)
    assert parsed.experiment, where
    if kind == "whole":
        assert parsed.name == data["name"]


def test_a_fragment_is_validated_inside_a_whole_spec(tmp_path):
    ok = whole(tomllib.loads('[runtime.runsc]\nnetstack = "gvisor"\n'), "fragment")
    assert spec.parse(ok, "fragment").runtime["runsc"].model_extra == {"netstack": "gvisor"}
    bad = whole(tomllib.loads('[runtime.runsc]\nnetstack = "lwip"\n'), "fragment")
    with pytest.raises(SpecError, match="netstack"):
        spec.parse(bad, "fragment")
    text = '[runtime.uk]\ndriver = "qemu"\nguest = "image"\nkernel = "/nonexistent/vb-docs/k"\n'
    image = whole(tomllib.loads(text), "fragment")
    parsed = spec.parse(stand_ins(image, tmp_path), "fragment")
    assert parsed.runtimes == ["uk"] and parsed.named == {"uk": "qemu"}
    with pytest.raises(SpecError, match="no such file"):
        spec.parse(image, "fragment")  # without the stand-in, the path is checked


def test_readme_is_at_most_200_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert 20 < len(lines) <= MAX_README_LINES, len(lines)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        base = slug(m.group(1))
        name, n = base, 1
        while name in found:  # a repeated heading gets -1, -2, ...
            name, n = f"{base}-{n}", n + 1
        found.add(name)
    return found


def links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return LINK.findall(text)


def test_every_relative_link_leads_to_a_file_and_heading_that_exist():
    seen, broken = 0, []
    for page in PAGES:
        for target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            seen += 1
            file, _, fragment = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}: no such file")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target}: no such heading")
    assert seen >= 20, seen
    assert broken == []


def test_readme_links_every_page_of_the_docs():
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in links(README)}
    assert {p.resolve() for p in DOCS} <= linked
    assert (ROOT / "CONTRIBUTING.md").resolve() in linked
