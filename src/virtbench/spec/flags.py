"""A spec as the command line changes it: `virtbench run`'s flags (`--runs`, `--step`,
S1's spellings) and `--quick` (each experiment's `quick` values) over the spec's raw
tables, validated again, every error naming the flag that caused it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from virtbench.errors import SpecError
from virtbench.tables.flags import FLAG_FIELDS

if TYPE_CHECKING:
    from virtbench.runtimes import Drivers
    from virtbench.spec import Spec


def flags_set(flags: dict[str, Any], field: str) -> bool:
    """Whether any CLI flag for `field` was given."""
    return any(v is not None for f, v in flags.items() if FLAG_FIELDS[f] == field)


def model_of(table: dict[str, Any]) -> Any:
    """An experiment table's model (boot's for a type the spec refuses anyway)."""
    from virtbench.spec import EXPERIMENT_TYPES

    return EXPERIMENT_TYPES.get(table.get("type", ""), EXPERIMENT_TYPES["boot"])


def with_overrides(
    data: dict[str, Any],
    where: str,
    runtimes_: list[str] | None,
    flags: dict[str, Any],
    *,
    quick: bool = False,
    drivers: Drivers | None = None,
    loadgen: dict[str, Any] | None = None,
) -> Spec:
    """Apply CLI flags to the raw spec and validate again; errors name the flag.
    `quick`: each experiment's `quick` values first (`--quick`), the flags over them.
    `loadgen`: the spec's load generator (`--loadgen`, `--ssh-option`) in place of its own.
    `drivers`: what its runtime labels name (default: the installed drivers).
    Runtimes the user names (`runtimes_`) must run: a spec's `unavailable = "skip"` no
    longer applies to them."""
    # the spec's models take a while to build: `run`'s options (FLAGS) do not need them
    from pydantic import ValidationError

    from virtbench.spec import Spec

    data = {**data, "experiment": [dict(e) for e in data.get("experiment", [])]}
    if quick:
        data = quick_tables(data, where)
    if runtimes_ is not None:
        data["runtimes"] = runtimes_
        data["unavailable"] = "fail"
    for flag, value in flags.items():
        if value is not None:
            set_flag(data["experiment"], flag, value, flags)
    if loadgen is not None:
        data["loadgen"] = loadgen
    try:
        return Spec.model_validate(data, context={"drivers": drivers})
    except ValidationError as err:
        raise flag_error(err, where, runtimes_, flags) from None


def quick_tables(data: dict[str, Any], where: str) -> dict[str, Any]:
    """The raw spec with each experiment's `quick` values in place (`--quick`)."""
    from virtbench.tables.base import quick_form

    if not any(isinstance(e.get("quick"), dict) and e["quick"] for e in data["experiment"]):
        raise SpecError(f"--quick: {where} has no quick form (no experiment has a quick table)")
    tables = [quick_form(e, e.get("quick") or {}, model_of(e).EITHER) for e in data["experiment"]]
    return {**data, "experiment": tables, "form": "quick"}


def set_flag(tables: list[dict[str, Any]], flag: str, value: Any, flags: dict[str, Any]) -> None:
    """Set `flag`'s field in every experiment table that has it (SpecError: none has)."""
    from virtbench.spec import EXPERIMENT_TYPES

    field = FLAG_FIELDS[flag]
    targets = [e for e in tables if field in model_of(e).model_fields]
    if not targets:
        kinds = sorted(k for k, m in EXPERIMENT_TYPES.items() if field in m.model_fields)
        raise SpecError(f"{flag}: does not apply to this spec (applies to: {', '.join(kinds)})")
    for e in targets:
        e[field] = value
        if field in ("worker", "workloads") and isinstance(e.get("params"), dict):
            from virtbench import workloads

            # the file's parameters of workloads the flag leaves out go with them
            names = value if isinstance(value, list) else [value]
            keep = {workloads.canonical(v) for v in names if isinstance(v, str)}
            if "all" not in keep:
                e["params"] = {k: v for k, v in e["params"].items() if k in keep}
        other = model_of(e).EITHER.get(field)
        if other and not flags_set(flags, other):
            e.pop(other, None)  # the command line's final count wins over the file's


def flag_error(
    err: Any, where: str, runtimes_: list[str] | None, flags: dict[str, Any]
) -> SpecError:
    """The spec's validation error, naming the flag that set the field where one did."""
    from virtbench.spec import describe

    line = describe(err, where)
    for flag, field in FLAG_FIELDS.items():
        m = re.search(rf"[.\s]{field}(\[\d+\])?: (.*)$", line)
        if flags.get(flag) is not None and m:
            index = f"{m.group(1)} " if m.group(1) else ""
            return SpecError(f"{flag}: {index}{m.group(2)}")
    if runtimes_ is not None and ": runtimes" in line:
        return SpecError(f"--runtimes: {line.split(': ', 2)[-1]}")
    return SpecError(line)
