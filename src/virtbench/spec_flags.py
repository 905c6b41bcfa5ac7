"""A spec as the command line changes it: `virtbench run`'s flags (`--runs`, `--step`,
S1's spellings) and `--quick` (each experiment's `quick` values) over the spec's raw
tables, validated again, every error naming the flag that caused it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from virtbench.errors import SpecError
from virtbench.spec_experiments import EXPERIMENT_TYPES, BootExperiment

if TYPE_CHECKING:
    from virtbench.spec import Spec


def quick_form(table: dict[str, Any], quick: dict[str, Any]) -> dict[str, Any]:
    """An experiment table with its `quick` values in place (params merged per workload)."""
    out = {k: v for k, v in table.items() if k != "quick"}
    for key, value in quick.items():
        if key == "params" and isinstance(value, dict):
            params = {k: dict(v) for k, v in (out.get("params") or {}).items()}
            for name, over in value.items():
                params[name] = {**params.get(name, {}), **(over if isinstance(over, dict) else {})}
            out["params"] = params
        else:
            out[key] = value
            other = SCALABILITY_EITHER.get(key)
            if other and other not in quick:  # the final count is given one way or the other
                out.pop(other, None)
    return out


# CLI flag -> experiment field it overrides (--step and --max are the scalability
# experiment's words for the same fields).
FLAG_FIELDS = {
    "--runs": "runs",
    "--warmups": "warmups",
    "--benchmark-times": "benchmark_times",
    "--benchmark_time": "benchmark_times",  # S1's runner's spellings
    "--benchmark_times": "benchmark_times",
    "--instances-per-benchmark": "instances_per_benchmark",
    "--instances_per_benchmark": "instances_per_benchmark",
    "--step": "instances_per_benchmark",
    "--instances": "instances",
    "--max": "instances",
    "--workloads": "workloads",
    "--worker": "worker",
    "--background": "background",
    "--attackers": "attackers",
    "--placements": "placements",
    "--target-cv": "target_cv",
    "--max-runs": "max_runs",
}


# The scalability experiment's final count is given one way or the other.
SCALABILITY_EITHER = {"instances": "benchmark_times", "benchmark_times": "instances"}


def flags_set(flags: dict[str, Any], field: str) -> bool:
    """Whether any CLI flag for `field` was given."""
    return any(v is not None for f, v in flags.items() if FLAG_FIELDS[f] == field)


def with_overrides(
    data: dict[str, Any],
    where: str,
    runtimes_: list[str] | None,
    flags: dict[str, Any],
    quick: bool = False,
) -> Spec:
    """Apply CLI flags to the raw spec and validate again; errors name the flag.
    `quick`: each experiment's `quick` values first (`--quick`), the flags over them.
    Runtimes the user names (`runtimes_`) must run: a spec's `unavailable = "skip"` no
    longer applies to them."""
    from virtbench.spec import Spec, describe  # spec.py re-exports this module's names

    data = {**data, "experiment": [dict(e) for e in data.get("experiment", [])]}
    if quick:
        if not any(isinstance(e.get("quick"), dict) and e["quick"] for e in data["experiment"]):
            raise SpecError(f"--quick: {where} has no quick form (no experiment has a quick table)")
        data["experiment"] = [quick_form(e, e.get("quick") or {}) for e in data["experiment"]]
        data["form"] = "quick"
    if runtimes_ is not None:
        data["runtimes"] = runtimes_
        data["unavailable"] = "fail"
    for flag, value in flags.items():
        if value is None:
            continue
        field = FLAG_FIELDS[flag]
        targets = [
            e
            for e in data["experiment"]
            if field in EXPERIMENT_TYPES.get(e.get("type", ""), BootExperiment).model_fields
        ]
        if not targets:
            kinds = sorted(k for k, m in EXPERIMENT_TYPES.items() if field in m.model_fields)
            raise SpecError(f"{flag}: does not apply to this spec (applies to: {', '.join(kinds)})")
        for e in targets:
            e[field] = value
            if field in ("worker", "workloads") and isinstance(e.get("params"), dict):
                from virtbench import workloads

                # the file's parameters of workloads the flag leaves out go with them
                names = value if isinstance(value, list) else [value]
                keep = {workloads.ALIASES.get(v, v) for v in names if isinstance(v, str)}
                if "all" not in keep:
                    e["params"] = {k: v for k, v in e["params"].items() if k in keep}
            other = SCALABILITY_EITHER.get(field)
            if e.get("type") == "scalability" and other and not flags_set(flags, other):
                e.pop(other, None)  # the command line's final count wins over the file's
    try:
        return Spec.model_validate(data)
    except ValidationError as err:
        line = describe(err, where)
        for flag, field in FLAG_FIELDS.items():
            m = re.search(rf"[.\s]{field}(\[\d+\])?: (.*)$", line)
            if flags.get(flag) is not None and m:
                index = f"{m.group(1)} " if m.group(1) else ""
                raise SpecError(f"{flag}: {index}{m.group(2)}") from None
        if runtimes_ is not None and ": runtimes" in line:
            raise SpecError(f"--runtimes: {line.split(': ', 2)[-1]}") from None
        raise SpecError(line) from None
