"""A run's testbed: the machine (and, for a run with its clients on a load generator, the
pair) its figures belong to.

Two runs are on one testbed when their fingerprints are equal: the host under test's CPU
model and count, SMT, memory, kernel, mitigations setting and each vulnerability's
status, KVM kind and host shape (init system and cgroup version), as its environment
snapshot records them (measure/machine.py), plus the load generator's own facts and name
where there was one. A figure from one testbed set against a figure from another mixes
the machines with what was changed, so `compare` refuses a verdict across testbeds unless
asked (`--across-testbeds`), and says what differs. Its id is a digest of the
fingerprint: `testbed` in the environment.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

HOST_KEYS = ("cpu_model", "cpu_count", "smt", "memory_bytes", "kernel", "kvm", "host_shape")


def fingerprint(env: dict[str, Any]) -> dict[str, Any]:
    """What identifies the testbed in a run's environment ({}: nothing recorded)."""
    out = {k: env[k] for k in HOST_KEYS if k in env}
    mitigations = env.get("mitigations")
    if isinstance(mitigations, dict):
        out["mitigations"] = {
            "setting": mitigations.get("setting"),
            "vulnerabilities": mitigations.get("vulnerabilities"),
        }
    loadgen = env.get("loadgen")
    if isinstance(loadgen, dict):
        out["loadgen"] = {"host": loadgen.get("host"), "facts": loadgen.get("facts")}
    return out


def testbed_id(env: dict[str, Any]) -> str:
    """The digest of the fingerprint ("" when the run recorded none)."""
    fp = fingerprint(env)
    if not fp:
        return ""
    return hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:12]


def describe(env: dict[str, Any]) -> str:
    """The testbed in a few words: `AMD EPYC x2, 23.5 GiB, kernel 6.1.0, KVM pvm`."""
    fp = fingerprint(env)
    if not fp:
        return "not recorded"
    words = f"{fp.get('cpu_model')} x{fp.get('cpu_count')}"
    if "memory_bytes" in fp:
        words += f", {fp['memory_bytes'] / 2**30:.1f} GiB"
    words += f", kernel {fp.get('kernel')}, KVM {fp.get('kvm')}"
    if "host_shape" in fp:
        words += f", {shape(fp)}"
    if "loadgen" in fp:
        words += f", clients on {fp['loadgen']['host']}"
    return words


def shape(env: dict[str, Any]) -> str:
    """The host's shape in words: `systemd, cgroup v2`."""
    facts = env.get("host_shape") or {}
    return f"{facts.get('init', '?')}, cgroup {facts.get('cgroups', '?')}"


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between two runs' testbeds, in words (empty: one testbed, or a run
    that recorded none, which cannot be told apart)."""
    fa, fb = fingerprint(a), fingerprint(b)
    if not fa or not fb:
        return []
    out = []
    for key in sorted(set(fa) | set(fb)):
        if fa.get(key) == fb.get(key):
            continue
        if key == "host_shape" and (key not in fa or key not in fb):
            continue  # a run from before the shape was recorded cannot be told apart by it
        if key == "loadgen":
            x, y = (f"on {f['loadgen']['host']}" if "loadgen" in f else "here" for f in (fa, fb))
            out.append(f"clients {x} vs {y}")
        elif key == "mitigations":
            out.append(key)
        elif key == "host_shape":
            out.append(f"host {shape(fa)} vs {shape(fb)}")
        else:
            out.append(f"{key.replace('_', ' ')} {fa.get(key)} vs {fb.get(key)}")
    return out
