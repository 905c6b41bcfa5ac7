"""Workloads as they declare themselves (workloads/kind.py): found without a list, by name
or alias, in their declared order; a declaration that does not hold together is refused;
the artifact holds every static program a workload runs."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from virtbench import workloads
from virtbench.artifacts import rootfs
from virtbench.workloads import memcached

GUEST = Path(__file__).parent.parent.parent / "guest"


def test_every_workload_module_is_found_in_its_order():
    names = workloads.names()
    assert names[:4] == ["hello", "sleep", "beat", "nginx"] and "memcached" in names
    assert [w.name for w in workloads.every()] == names
    assert set(workloads.measuring()) < set(names)
    assert "hello" not in workloads.measuring() and "sqlite" in workloads.measuring()


def test_aliases_come_from_the_declarations():
    assert workloads.get("sqlite-bench") is workloads.get("sqlite")
    assert workloads.canonical("sqlite-bench") == "sqlite"
    assert workloads.canonical("boot") == "boot"  # not a workload: as given
    with pytest.raises(KeyError):
        workloads.get("nope")


def test_workloads_have_an_order_of_their_own():
    """Listings and the registry do not fall back on names to order workloads."""
    every = workloads.every()
    assert len({w.order for w in every}) == len(every)
    figures = [w for w in every if w.metrics]
    assert len({w.metrics_order for w in figures}) == len(figures)


def test_a_declaration_that_does_not_hold_together_is_refused():
    wl = memcached.WORKLOAD
    assert wl.measures is not None
    nope = dataclasses.replace(memcached.OPS_PER_S, name="nope")
    with pytest.raises(ValueError, match="primary figure nope"):
        dataclasses.replace(wl, measures=dataclasses.replace(wl.measures, primary=nope))
    with pytest.raises(ValueError, match=r"primary figure p\*_us"):  # a family: no figure
        dataclasses.replace(
            wl, measures=dataclasses.replace(wl.measures, primary=memcached.LATENCY_P)
        )
    # a family's member is one of its figures, as declared
    member = dataclasses.replace(wl.measures, primary=memcached.LATENCY_P.of(99))
    assert dataclasses.replace(wl, measures=member).measures.primary.name == "p99_us"
    with pytest.raises(ValueError, match="workload=<its name>"):
        dataclasses.replace(wl, name="other")
    with pytest.raises(ValueError, match='ends = "serve"'):
        dataclasses.replace(wl, serves=None)
    with pytest.raises(ValueError, match="measuring workload"):
        dataclasses.replace(wl, measures=None)
    with pytest.raises(ValueError, match="runs argv"):
        dataclasses.replace(workloads.get("hello"), argv=None)


def test_the_rootfs_holds_what_guest_makefile_builds_and_every_workload_runs():
    """Every static program guest/Makefile builds goes into the rootfs, and every one a
    workload declares (or drives its server with, from the artifact) is built."""
    make = (GUEST / "Makefile").read_text()
    built = set(re.search(r"^PROGS := (.*)$", make, re.M).group(1).split())
    assert set(rootfs.programs()) == built
    for wl in workloads.every():
        assert set(wl.needs.static_programs) <= built, wl.name
        mine = {c.removeprefix("/bin/") for c in (wl.serves.clients if wl.serves else ())}
        assert {c for c in mine if c.startswith("vb-")} <= built, wl.name
    dynamic = set(re.search(r"^DYN_PROGS := (.*)$", make, re.M).group(1).split())
    assert {p for wl in workloads.every() for p in wl.needs.guest_programs} <= dynamic
