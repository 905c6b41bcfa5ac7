"""A Kubernetes RuntimeClass per pod handler a run measured (`cri:*`): its
`overhead.podFixed.memory` from the pod overhead the run measured (density's
`density.pod_overhead`: the sandbox's charge and the shim's PSS), the 95% CI's upper end
plus a stated margin, rounded up to a whole MiB, as a manifest line a user can apply.
CPU is not measured yet, and the manifest says so rather than guess.
"""

from __future__ import annotations

import math

from rich.table import Table

from virtbench.report.cells import add_columns, quantity
from virtbench.report.views.kind import standings
from virtbench.store.frame import Frame

METRIC = "density.pod_overhead"
MARGIN = 0.10  # over the CI's upper end: what a pod may cost that this run did not see
HANDLER_OF = "cri"  # the driver whose variants are RuntimeClass handlers


def handler(runtime: str) -> str:
    """`cri:crun` -> "crun"; `cri` (its default) -> "runc"."""
    base, _, variant = runtime.partition(":")
    return variant or ("runc" if base == HANDLER_OF else base)


def pod_fixed_mib(high_mib: float) -> int:
    """podFixed's memory: the upper end plus MARGIN, rounded up to a whole MiB."""
    return max(1, math.ceil(high_mib * (1 + MARGIN)))


def manifest(runtime: str, memory_mib: int) -> str:
    """The RuntimeClass as one line of YAML (its flow style: it pastes into a file)."""
    name = handler(runtime)
    return (
        f"{{apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {{name: {name}}}, "
        f"handler: {name}, overhead: {{podFixed: {{memory: {memory_mib}Mi}}}}}}"
    )


def table(f: Frame, title: str) -> Table | None:
    """Per pod runtime: its pod overhead, 95% CI, podFixed and manifest; None without
    pods."""
    rows = f.where("metric", METRIC) & ~f.warmup
    if not rows.any():
        return None
    t = Table(title=f"{title}: a RuntimeClass for each pod handler", title_justify="left")
    add_columns(
        t, ["runtime", "pod overhead", "95% CI", "podFixed", "manifest"], ("runtime", "manifest")
    )
    for st in standings(f.take(rows)):
        high = (
            st.high if st.has_ci else float(max(st.values)) if st.values is not None else st.value
        )
        mib = pod_fixed_mib(high)
        median, ci = quantity(st.value, "MiB", st.low, st.high)
        t.add_row(
            st.runtime, median, ci if st.has_ci else st.no_ci, f"{mib}Mi", manifest(st.runtime, mib)
        )
    t.caption = (
        "pod overhead: what a pod costs beyond its container (its cgroup's charge beyond "
        f"the container's, and its shim's PSS); podFixed: the CI's upper end plus {MARGIN:.0%}, "
        "rounded up to a whole MiB (the largest pod seen, where there is no CI); its cpu "
        "is not measured: set it as your nodes need"
    )
    t.caption_justify = "left"
    return t
