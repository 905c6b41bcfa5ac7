"""Before a run starts anything: what of its spec this host can run (the runtimes that
are here and the experiments each can run; a study skips the rest and says why), and the
host's side of its sysctl profile."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from virtbench import runtimes
from virtbench.errors import RuntimeUnavailable, SpecError, VirtbenchError
from virtbench.host import sysctl
from virtbench.host.state import RunState
from virtbench.paths import Paths
from virtbench.spec import Spec


def check_available(spec: Spec) -> tuple[Spec, dict[str, str], list[str]]:
    """What of `spec` runs here: (the spec to run, the versions of its runtimes, what was
    skipped and why). With `unavailable = "fail"` (the default) the first runtime that
    cannot run here, or cannot run an experiment's workload, raises naming it; with
    "skip" (the studies' entries) it is left out there and said. The spec returned names,
    per experiment, the runtimes that run it."""
    check = Preflight(spec)
    check.runtimes()
    exps = [check.experiment(exp) for exp in spec.experiment]
    return check.result(exps)


class Preflight:
    """What of one spec runs here, found step by step: the runtimes, then each
    experiment's."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.skip = spec.unavailable == "skip"
        self.versions: dict[str, str] = {}
        self.skipped: list[str] = []
        self.options: dict[str, tuple[Any, Any]] = {}  # label -> (driver class, options)
        self.cannot: dict[tuple[str, str], list[str]] = {}  # (runtime, why) -> "exp (workload)"

    def runtimes(self) -> None:
        """Each runtime that is here, with its version; the others raise or are skipped."""
        for label in self.spec.runtimes:
            cls = runtimes.get(self.spec.driver_of(label))
            opts = cls.Options(**self.spec.options_for(label))
            avail = cls.available(opts)
            if not avail.ok:
                fix = f"; fix: {avail.fix}" if avail.fix else ""
                if not self.skip:
                    raise RuntimeUnavailable(
                        f"runtime {label} is not available: {avail.reason}{fix}"
                    )
                self.skipped.append(f"{label}: not available here: {avail.reason}{fix}")
                continue
            self.versions[label] = avail.version
            self.options[label] = (cls, opts)

    def experiment(self, exp: Any) -> Any:
        """The experiment as it runs here (with `skip`: naming the runtimes that run it)."""
        spec, skip = self.spec, self.skip
        if skip and exp.runtimes and not spec.runtimes_of(exp):  # a part for other runtimes
            self.skipped.append(f"{exp.type}: it runs on {', '.join(exp.runtimes)}, which "
                                "this run does not")  # fmt: skip
            return exp.model_copy(update={"runtimes": []})
        keep = self.attackers(exp, self.runners(exp))
        if skip and not keep and any(r in self.options for r in spec.runtimes_of(exp)):
            self.skipped.append(f"{exp.type}: no runtime here can run it")
        return exp.model_copy(update={"runtimes": keep}) if skip else exp

    def runners(self, exp: Any) -> list[str]:
        """Its runtimes that are here and run every workload of its instances (e.g. a VM's
        minimal guest runs only hello and sleep)."""
        keep = []
        for label in self.spec.runtimes_of(exp):
            if label not in self.options:
                continue
            cls, opts = self.options[label]
            why = next(
                ((w, r) for w in exp.instance_workloads() if (r := cls.cannot_run(w, opts))), None
            )
            if why is None:
                keep.append(label)
            elif self.skip:
                self.cannot.setdefault((label, why[1]), []).append(f"{exp.type} ({why[0]})")
            else:
                raise SpecError(f"runtime {label} cannot run {why[0]} ({exp.type}): {why[1]}")
        return keep

    def attackers(self, exp: Any, keep: list[str]) -> list[str]:
        """`keep`, unless the experiment's attackers' runtime cannot run every attacker."""
        other = getattr(exp, "attacker_runtime", None)
        if other is None or not keep:
            return keep
        options = self.options
        why = f"{other} is not available here" if other not in options else next(
            (f"{other} cannot run {w}: {r}" for w in exp.attacker_workloads()
             if (r := options[other][0].cannot_run(w, options[other][1]))), None
        )  # fmt: skip
        if why is None:
            return keep
        if not self.skip:
            raise SpecError(f"{exp.type}: attacker_runtime {why}")
        self.skipped.append(f"{exp.type}: attacker_runtime {why}")
        return []

    def result(self, exps: list[Any]) -> tuple[Spec, dict[str, str], list[str]]:
        """(the spec to run, its runtimes' versions, what was skipped and why)."""
        spec, skipped = self.spec, self.skipped
        for (label, why), parts in self.cannot.items():
            skipped.append(f"{label} skips {', '.join(dict.fromkeys(parts))}: {why}")
        if self.skip:
            left = [r for r in spec.runtimes if r in self.options]
            if not left:
                raise RuntimeUnavailable(
                    f"{spec.name}: none of its runtimes can run here ({'; '.join(skipped)})"
                )
            spec = spec.model_copy(update={"runtimes": left, "experiment": exps})
        return spec, self.versions, skipped


def named_runtimes(spec: Spec) -> dict[str, dict[str, Any]]:
    """What each of the spec's named runtimes stood for, for the run's record: its driver,
    its options, and every file an option names (a kernel, an initrd, a disk) with its
    size and SHA-256, so that a result can be traced to the very image it measured."""
    out: dict[str, dict[str, Any]] = {}
    for label in spec.runtimes:
        if label not in spec.named:
            continue
        opts = spec.options_for(label)
        files = {}
        for key, value in opts.items():
            if isinstance(value, str) and key in _FILE_OPTIONS and Path(value).is_file():
                files[key] = _file_record(Path(value))
        out[label] = {"driver": spec.named[label], "options": opts, "files": files}
    return out


_FILE_OPTIONS = ("kernel", "initrd", "disk")


def _file_record(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return {"path": str(path.resolve()), "bytes": path.stat().st_size,
            "sha256": digest.hexdigest()}  # fmt: skip


def apply_sysctl(spec: Spec, paths: Paths, run_state: RunState) -> sysctl.HostProfile:
    """The run's sysctl profile on this host (host/sysctl.py), refused while another run holds
    one: two would each put back the other's values."""
    others = sysctl.holders(paths.runs, run_state.dir.name)
    if others:
        raise VirtbenchError(
            f"sysctl: run {', '.join(others)} holds a sysctl profile on this host (running, "
            "or crashed: `virtbench clean` puts its values back); one profile at a time"
        )
    return sysctl.HostProfile(spec.sysctl, run_state.dir)
