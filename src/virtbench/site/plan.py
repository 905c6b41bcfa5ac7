"""The site's shape, from the store's run records alone (no sample is read): its
testbeds, each testbed's entries (a spec's name, and the fleet host for a fleet's runs),
each entry's runs in the order they started, the run each finished run is compared with
(the entry's previous completed one), and every run's digest, which changes whenever
anything its files are made of does."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from virtbench import __version__
from virtbench.host import testbed
from virtbench.store.records import RunRecord

FORMAT = 1  # of the site's files: a new one rebuilds every page
UNRECORDED = "unrecorded"  # the testbed of runs whose environment has no fingerprint


def digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def slug(text: str) -> str:
    """A readable, case-folded path part of any name, with a short hash of the name so
    that two names never share one ("S1 uk/ng" and "s1-uk-ng" differ)."""
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "entry"
    return f"{words}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


@dataclass
class Run:
    """A run as the site places it."""

    record: RunRecord
    testbed: str  # its id, or UNRECORDED
    entry: str  # its entry's slug
    samples: str  # the store's fingerprint of its samples
    previous: Run | None = None  # the entry's completed run before it (compared with it)

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def own(self) -> str:
        """What the run is: its record's state, its samples and where it is placed."""
        r = self.record
        mine = (r.id, r.status, r.created, r.finished, r.host, r.fleet, r.name, self.samples)
        return digest(FORMAT, __version__, mine, self.testbed, self.entry)

    @property
    def digest(self) -> str:
        """What its files (report, JSON, BMF) are made of: the run and the run it is
        compared with (none on machines not recorded)."""
        compared = self.previous if self.testbed != UNRECORDED else None
        return digest(self.own, compared.own if compared is not None else None)


@dataclass
class Entry:
    """What one spec measured on one testbed (on one fleet host), run after run."""

    testbed: str
    name: str
    host: str  # the fleet host's label ("" for runs of this machine alone)
    slug: str
    runs: list[Run] = field(default_factory=list)

    @property
    def completed(self) -> list[Run]:
        return [r for r in self.runs if r.record.status == "completed"]

    @property
    def latest(self) -> Run | None:
        """The run its leaderboard and latest.json show: the last one that completed."""
        done = self.completed
        return done[-1] if done else None


@dataclass
class Testbed:
    id: str
    describe: str
    entries: list[Entry] = field(default_factory=list)


@dataclass
class Plan:
    testbeds: list[Testbed]
    running: int  # runs still going, left out

    @property
    def runs(self) -> list[Run]:
        return [r for t in self.testbeds for e in t.entries for r in e.runs]


def plan(runs: list[RunRecord], samples: dict[str, str]) -> Plan:
    """The site of these runs (in the order they started); `samples` holds each one's
    sample fingerprint. Testbeds are ordered by id, entries by name and host."""
    beds: dict[str, Testbed] = {}
    entries: dict[tuple[str, str, str], Entry] = {}
    running = 0
    for r in sorted(runs, key=lambda r: (r.created, r.id)):
        if r.status == "running":
            running += 1
            continue
        bed = testbed.testbed_id(r.environment) or UNRECORDED
        beds.setdefault(bed, Testbed(bed, testbed.describe(r.environment)))
        key = (bed, r.name, r.host)
        if key not in entries:
            name = r.name + (f" on {r.host}" if r.host else "")
            entries[key] = Entry(bed, r.name, r.host, slug(name))
            beds[bed].entries.append(entries[key])
        entry = entries[key]
        last = entry.latest
        entry.runs.append(Run(r, bed, entry.slug, samples[r.id], last))
    for b in beds.values():
        b.entries.sort(key=lambda e: (e.name, e.host))
    return Plan([beds[k] for k in sorted(beds)], running)
