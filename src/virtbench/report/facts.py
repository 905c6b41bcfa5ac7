"""A run's facts as a person reads them, for the report's appendix: the environment's
known keys, each with its words and how its value is shown (host/facts.py records
them), the spec as TOML, and a figure every runtime measured alike (a fact of the run,
not a comparison)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import tomlkit

from virtbench.report.cells import fmt


def _bytes(value: Any) -> str:
    if not isinstance(value, int | float):
        return str(value)
    return "none" if value == 0 else f"{value / 2**30:.1f} GiB"


def _yes(value: Any) -> str:
    return {True: "yes", False: "no"}.get(value, str(value))


def cpu_list(value: Any) -> str:
    """[0, 1, 2, 5] as "0-2, 5"."""
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        return str(value)
    runs: list[list[int]] = []
    for v in sorted(value):
        if runs and v == runs[-1][-1] + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


# the kernel's SMT control, and its mitigations= attack vectors, in words
SMT_WORDS = {
    "on": "on",
    "off": "off",
    "forceoff": "forced off",
    "notsupported": "not supported",
    "notimplemented": "not controllable",
}
VECTOR_WORDS = {
    "no_user_kernel": "user to kernel",
    "no_user_user": "user to user",
    "no_guest_host": "guest to host",
    "no_guest_guest": "guest to guest",
    "no_cross_thread": "across SMT threads",
}


def smt_words(control: Any) -> str:
    """The kernel's SMT control in words ("notsupported" -> "not supported")."""
    return SMT_WORDS.get(str(control), str(control))


def mitigation_setting_words(setting: Any) -> str:
    """`mitigations=` in words: "auto,no_guest_host,no_guest_guest" -> "auto, except
    guest to host and guest to guest"."""
    first, *rest = str(setting).split(",")
    skipped = [VECTOR_WORDS[r] for r in rest if r in VECTOR_WORDS]
    others = [r for r in rest if r not in VECTOR_WORDS]  # nosmt and the like, as given
    text = ", ".join([first, *others])
    if skipped:
        text += ", except " + " and ".join(
            [", ".join(skipped[:-1]), skipped[-1]] if len(skipped) > 1 else skipped
        )
    return text


def mitigations_words(value: Any) -> str:
    """The mitigations fact in words: its setting, and the vulnerabilities by status."""
    if not isinstance(value, dict):
        return str(value)
    counts = value.get("counts") or {}
    said = ", ".join(f"{n} {k}" for k, n in counts.items() if n and k != "not affected")
    setting = mitigation_setting_words(value.get("setting", "n/a"))
    return setting + (f" ({said})" if said else "")


def _quiet(value: Any) -> str:
    if not isinstance(value, dict):
        return str(value)
    if not value.get("enabled"):
        return "off"
    window = value.get("window_ms")
    text = f"on: CPUs idle for a {fmt(window)} ms window" if window is not None else "on"
    return text + (", primer run first" if value.get("primer") else "")


# Known keys: (key, what a person reads, how its value is shown), in the order shown.
def _loadgen(facts: Any) -> str:
    from virtbench.loadgen.baseline import describe

    return describe(facts) if isinstance(facts, dict) else str(facts)


def _shape(facts: Any) -> str:
    from virtbench.host.testbed import shape

    return shape({"host_shape": facts}) if isinstance(facts, dict) else str(facts)


KNOWN: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("hostname", "host name", str),
    ("os", "operating system", str),
    ("kernel", "kernel", str),
    ("cpu_model", "CPU", str),
    ("cpu_count", "CPUs", str),
    ("cpus_allowed", "CPUs the run used", cpu_list),
    ("smt", "SMT (hyper-threads) active", _yes),
    ("smt_control", "SMT control", smt_words),
    ("memory_bytes", "memory", _bytes),
    ("swap_bytes", "swap", _bytes),
    ("kvm", "KVM", str),
    ("virtualization", "this host a virtual machine of (qemu: emulated)", str),
    ("cgroup_version", "cgroups", str),
    ("host_shape", "host shape (init, cgroups)", _shape),
    ("lsm", "security modules", str),
    ("mitigations", "CPU vulnerability mitigations", mitigations_words),
    ("quiescence", "quiet host before each timed launch", _quiet),
    ("loadgen", "serving workloads' clients", _loadgen),
    ("python", "Python", str),
    ("virtbench", "virtbench", str),
)
# tables of their own, or lines (not_run: among the warnings)
SHOWN_APART = ("runtimes", "named_runtimes", "tools", "mitigations", "not_run")


def environment(env: dict[str, Any]) -> list[tuple[str, str]]:
    """(what, value) of every environment key: the known ones in their words, any other
    with its underscores as spaces and its value as plain text."""
    out = [(words, show(env[key])) for key, words, show in KNOWN if key in env]
    known = {key for key, _, _ in KNOWN} | set(SHOWN_APART)
    for key, value in env.items():
        if key not in known:
            out.append((key.replace("_", " "), plain(value)))
    return out


def plain(value: Any) -> str:
    """A value of no known key as text: a list joined, a mapping as "key value" pairs."""
    if isinstance(value, dict):
        return "; ".join(f"{k.replace('_', ' ')} {plain(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(plain(v) for v in value)
    if isinstance(value, float) and not math.isnan(value):
        return fmt(value)
    return _yes(value) if isinstance(value, bool) else str(value)


def vulnerabilities(env: dict[str, Any]) -> list[tuple[str, str]]:
    """(vulnerability, the kernel's status) of every one the kernel lists."""
    m = env.get("mitigations")
    found = m.get("vulnerabilities") if isinstance(m, dict) else None
    return [(k.replace("_", " "), str(v)) for k, v in (found or {}).items()]


def tools(env: dict[str, Any]) -> list[tuple[str, str]]:
    """(tool, its version) of the tools the run used."""
    return [(k, str(v)) for k, v in (env.get("tools") or {}).items()]


def spec_toml(spec: dict[str, Any]) -> str:
    """The spec as TOML, as users write it: what was set, without the empty tables, lists
    and strings its defaults leave (and no value TOML cannot hold)."""
    return tomlkit.dumps(_set(spec))


def _set(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {k: _set(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [_set(v) for v in value if v is not None]
    return value
