"""What the catalog's tests share (tests/unit/test_catalog.py, test_catalog_listing.py):
the five studies' entries, and `virtbench catalog`'s output read back."""

from __future__ import annotations

STUDIES = [
    "s1-docker-unikraft",
    "s2-kvm-docker-includeos",
    "s3-lightweight-survey",
    "s4-ukl",
    "s5-serverless",
]


def listing(output: str) -> tuple[dict[str, list[str]], dict[str, str], str]:
    """`virtbench catalog`'s output as (each heading with its entries, in order; entry ->
    its line with its words joined by single spaces; the notes below, likewise)."""
    groups: dict[str, list[str]] = {}
    lines: dict[str, list[str]] = {}
    notes: list[str] = []
    current: list[str] = []
    for line in output.splitlines():
        if line.startswith("Estimates "):  # the last paragraph: what the estimates are
            break
        if line.startswith("What this host lacks"):
            current = notes
        elif line and not line.startswith(" "):
            groups[line] = []
        elif line.startswith("  ") and line[2] != " " and " — " in line and current is not notes:
            name = line.split()[0]
            groups[list(groups)[-1]].append(name)
            current = lines.setdefault(name, [])
        current.append(line)
    joined = {name: " ".join(" ".join(ls).split()) for name, ls in lines.items()}
    return groups, joined, " ".join(" ".join(notes).split())
