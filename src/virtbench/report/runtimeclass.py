"""A Kubernetes RuntimeClass per pod handler a run measured (`cri:*`): its
`overhead.podFixed` from the pod overhead the run measured (density's
`density.pod_overhead`, the sandbox's charge and the shim's PSS, and
`density.pod_idle_cpu`, their CPU while idle), each the 95% CI's upper end plus a stated
margin, rounded up (a whole MiB, a whole millicore), as a manifest line a user can apply,
beside the podFixed the handler's own RuntimeClass ships where one is known.
"""

from __future__ import annotations

import math

from rich.table import Table

from virtbench.experiments.density_figures import POD_OVERHEAD
from virtbench.experiments.density_idle import POD_IDLE_CPU
from virtbench.report.cells import add_columns, fmt, span
from virtbench.report.standing import Standing
from virtbench.report.views.kind import standings
from virtbench.store.frame import Frame

MEMORY, CPU = POD_OVERHEAD.name, POD_IDLE_CPU.name
MARGIN = 0.10  # over the CI's upper end: what a pod may cost that this run did not see
HANDLER_OF = "cri"  # the driver whose variants are RuntimeClass handlers
# podFixed (memory, cpu) of the RuntimeClasses a handler's project ships (Kata
# Containers' kata-deploy); runc, crun, youki and runsc ship none with an overhead
SHIPPED = {
    "kata-qemu": ("160Mi", "250m"),
    "kata-qemu-runtime-rs": ("160Mi", "250m"),
    "kata-clh": ("130Mi", "250m"),
    "kata-cloud-hypervisor": ("130Mi", "250m"),
    "kata-fc": ("130Mi", "250m"),
    "kata-dragonball": ("130Mi", "250m"),
    "kata-stratovirt": ("130Mi", "250m"),
}


def handler(runtime: str) -> str:
    """`cri:crun` -> "crun"; `cri` (its default) -> "runc"."""
    base, _, variant = runtime.partition(":")
    return variant or ("runc" if base == HANDLER_OF else base)


def rounded_up(high: float) -> int:
    """A podFixed figure: the upper end plus MARGIN, rounded up to a whole unit (at
    least 1)."""
    return max(1, math.ceil(high * (1 + MARGIN)))


def manifest(runtime: str, memory_mib: int, cpu_m: int | None) -> str:
    """The RuntimeClass as one line of YAML (its flow style: it pastes into a file)."""
    name = handler(runtime)
    cpu = "" if cpu_m is None else f", cpu: {cpu_m}m"
    return (
        f"{{apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {{name: {name}}}, "
        f"handler: {name}, overhead: {{podFixed: {{memory: {memory_mib}Mi{cpu}}}}}}}"
    )


def _upper(st: Standing) -> float:
    """The CI's upper end; the largest value seen where there is no CI."""
    if st.has_ci:
        return st.high
    return float(max(st.values)) if st.values is not None and len(st.values) else st.value


def _cell(st: Standing | None, unit: str) -> str:
    """ "4.08 MiB (3.84-4.39)", "0.41 m (0.38-0.45)": the median and its CI (or what
    stands in its place), in the unit the manifest writes."""
    if st is None:
        return "not measured"
    ci = span(st.low, st.high) if st.has_ci else st.no_ci or "no CI"
    return f"{fmt(st.value)} {unit} ({ci})"


def _shipped(runtime: str) -> str:
    known = SHIPPED.get(handler(runtime))
    return "none" if known is None else f"{known[0]}, {known[1]}"


def table(f: Frame, title: str) -> Table | None:
    """Per pod runtime: its pod overhead and idle CPU with their 95% CIs, the podFixed
    made of them and the handler's shipped one; under it, each handler's manifest (one
    flow-style YAML document each: a line broken where it wraps still reads the same);
    None without pods."""
    rows = f.where("metric", MEMORY) & ~f.warmup
    if not rows.any():
        return None
    cpu_rows = f.where("metric", CPU) & ~f.warmup
    cpus = {st.runtime: st for st in standings(f.take(cpu_rows))} if cpu_rows.any() else {}
    t = Table(title=f"{title}: a RuntimeClass for each pod handler", title_justify="left")
    add_columns(t, ["runtime", "pod overhead", "idle CPU", "podFixed", "shipped"], ("runtime",))
    manifests = []
    for st in standings(f.take(rows)):
        cpu = cpus.get(st.runtime)
        mib = rounded_up(_upper(st))
        cpu_m = None if cpu is None else rounded_up(_upper(cpu))
        fixed = f"{mib}Mi" + ("" if cpu_m is None else f", {cpu_m}m")
        t.add_row(
            st.runtime,
            _cell(st, "MiB"),
            _cell(cpu, "m"),
            fixed,
            _shipped(st.runtime),
        )
        manifests.append(manifest(st.runtime, mib, cpu_m))
    t.caption = (
        "pod overhead: what a pod costs beyond its container (its cgroup's charge beyond "
        "the container's, and its shim's PSS); idle CPU: their CPU while every pod idles, in "
        "millicores (m); "
        f"podFixed: each 95% CI's upper end plus {MARGIN:.0%}, rounded up to a whole MiB "
        "and millicore (the largest seen, where there is no CI); shipped: the podFixed of "
        "the handler's own RuntimeClass (Kata Containers' kata-deploy), none for runc, "
        "crun, youki and runsc\nEach handler's RuntimeClass, as YAML a cluster applies "
        "(`kubectl apply -f`):\n" + "\n---\n".join(manifests)
    )
    t.caption_justify = "left"
    return t
