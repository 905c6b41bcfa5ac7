"""The guests a study compared that virtbench cannot build, which the user brings as
images (docs/images.md): a spec's `brings`, each with what a runtime that stands for it
looks like (its preset, its driver, or its own `stands_for`), what building it needs and
where the docs say how.

    [[brings]]
    guest = "includeos"
    preset = "includeos"
    builds = "builds only through Nix (IncludeOS v0.16+)"
    see = "docs/images.md#presets"

A run records each guest that no runtime of it stood for as not run, with why
(run/preflight.py `not_run`, in the run's environment); the run, `show` and the report
say so (`not_run_line` beside it), and `catalog` says what each study expects.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator

from virtbench import runtimes
from virtbench.runtimes import Drivers
from virtbench.runtimes.vm.guest import PresetName
from virtbench.tables.base import Model

GUEST = r"^[a-z][a-z0-9-]{0,31}$"
SEE = r"^docs/[a-z0-9_-]+\.md(#[a-z0-9-]+)?$"  # a page of this project's docs
NO_IMAGE = "no image given"  # the reason when no runtime of the spec stands for the guest
STUDY_CODE = re.compile(r"^(S\d+):")


class Brought(Model):
    """One guest the study compared that the user brings as an image."""

    # its name, as `stands_for` and the run's record give it: "includeos"
    guest: str
    # a runtime with this preset stands for it ([runtime.X] preset = "...")
    preset: PresetName | None = None
    # a runtime on one of these drivers stands for it (MirageOS: solo5-hvt, solo5-spt)
    drivers: list[str] = []
    # what building it needs, after "it": "builds only through Nix (IncludeOS v0.16+)"
    builds: str = Field(min_length=1, max_length=300)
    # where this project's docs say how to build and give it
    see: str = "docs/images.md"

    @field_validator("guest")
    @classmethod
    def _guest(cls, v: str) -> str:
        if not re.match(GUEST, v):
            raise ValueError(
                f"{v!r} is not a guest's name: lowercase letters, digits and '-', starting "
                "with a letter, at most 32 (like includeos)"
            )
        return v

    @field_validator("builds")
    @classmethod
    def _one_line(cls, v: str) -> str:
        if "\n" in v:
            raise ValueError("one line: what building it needs, in a few words")
        return v

    @field_validator("see")
    @classmethod
    def _see(cls, v: str) -> str:
        if not re.match(SEE, v):
            raise ValueError(
                f"{v!r} is not a page of this project's docs (like docs/images.md#presets)"
            )
        return v

    def stood_for_by(self, driver: str, options: Mapping[str, Any], stands_for: str | None) -> bool:
        """Whether a runtime on `driver` with driver `options` and its own `stands_for`
        stands for this guest."""
        if stands_for is not None:
            return stands_for == self.guest
        if self.preset is not None and options.get("preset") == self.preset:
            return True
        return runtimes.split(driver)[0] in self.drivers


def check(brought: list[Brought], drivers: Drivers) -> None:
    """Each guest once, each of its drivers one that exists (ValueError naming where)."""
    seen: set[str] = set()
    for i, b in enumerate(brought):
        if b.guest in seen:
            raise ValueError(f"[{i}].guest {b.guest!r} is brought twice")
        seen.add(b.guest)
        for j, name in enumerate(b.drivers):
            if name not in drivers.names():
                raise ValueError(
                    f"[{i}].drivers[{j}] {name!r} is not a driver (allowed: "
                    f"{', '.join(drivers.names())})"
                )


def check_stands_for(tables: Mapping[str, Any], brought: list[Brought]) -> None:
    """Every `[runtime.X] stands_for` names a guest the spec brings."""
    guests = [b.guest for b in brought]
    for label, table in tables.items():
        if table.stands_for is not None and table.stands_for not in guests:
            allowed = f"brings: {', '.join(guests)}" if guests else "the spec brings none"
            raise ValueError(
                f"runtime.{label}.stands_for: {table.stands_for!r} is not a guest this "
                f"spec brings ({allowed})"
            )


def study_code(study: str) -> str:
    """`S2` of a study's `S2: KVM vs Docker ...`; "" where it has no such code."""
    m = STUDY_CODE.match(study)
    return m.group(1) if m else ""
