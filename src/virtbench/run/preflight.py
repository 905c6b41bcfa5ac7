"""Before a run starts anything: what of its spec this host can run (the runtimes that
are here and the experiments each can run; a study skips the rest and says why), and the
host's side of its sysctl profile."""

from __future__ import annotations

from typing import Any

from virtbench.errors import RuntimeUnavailable, SpecError, VirtbenchError
from virtbench.host import sysctl
from virtbench.host.state import RunState
from virtbench.paths import Paths
from virtbench.spec import Spec, brings
from virtbench.spec.resolved import Part, Plan, RuntimePlan


def check_available(plan: Plan) -> tuple[Plan, dict[str, str], list[str]]:
    """What of `plan` runs here: (the plan to run, the versions of its runtimes, what was
    skipped and why). With `unavailable = "fail"` (the default) the first runtime that
    cannot run here, or cannot run an experiment's workload, raises naming it; with
    "skip" (the studies' entries) it is left out there and said. The plan returned names,
    per experiment, the runtimes that run it."""
    check = Preflight(plan)
    check.runtimes()
    exps = [check.experiment(part) for part in plan.parts]
    return check.result(exps)


class Preflight:
    """What of one plan runs here, found step by step: the runtimes, then each
    experiment's."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.skip = plan.spec.unavailable == "skip"
        self.versions: dict[str, str] = {}
        self.skipped: list[str] = []
        self.here: dict[str, RuntimePlan] = {}  # the runtimes that can run here
        self.cannot: dict[tuple[str, str], list[str]] = {}  # (runtime, why) -> "exp (workload)"

    def runtimes(self) -> None:
        """Each runtime that is here, with its version; the others raise or are skipped."""
        for label, runtime in self.plan.runtimes.items():
            avail = runtime.available()
            if not avail.ok:
                fix = f"; fix: {avail.fix}" if avail.fix else ""
                if not self.skip:
                    raise RuntimeUnavailable(
                        f"runtime {label} is not available: {avail.reason}{fix}"
                    )
                self.skipped.append(f"{label}: not available here: {avail.reason}{fix}")
                continue
            self.versions[label] = avail.version
            self.here[label] = runtime

    def experiment(self, part: Part) -> Any:
        """The experiment as it runs here (with `skip`: naming the runtimes that run it)."""
        exp, skip = part.experiment, self.skip
        if skip and exp.runtimes and not part.runtimes:  # a part for other runtimes
            self.skipped.append(
                f"{exp.type}: it runs on {', '.join(exp.runtimes)}, which this run does not"
            )
            return exp.model_copy(update={"runtimes": []})
        keep = self.attackers(exp, self.runners(part))
        if skip and not keep and any(r in self.here for r in part.runtimes):
            self.skipped.append(f"{exp.type}: no runtime here can run it")
        return exp.model_copy(update={"runtimes": keep}) if skip else exp

    def runners(self, part: Part) -> list[str]:
        """Its runtimes that are here and run every workload of its instances (e.g. a VM's
        minimal guest runs only hello and sleep)."""
        keep = []
        for label in part.runtimes:
            if label not in self.here:
                continue
            runtime = self.here[label]
            why = next(((w, r) for w in part.workloads if (r := runtime.cannot_run(w))), None)
            if why is None:
                keep.append(label)
            elif self.skip:
                self.cannot.setdefault((label, why[1]), []).append(f"{part.type} ({why[0]})")
            else:
                raise SpecError(f"runtime {label} cannot run {why[0]} ({part.type}): {why[1]}")
        return keep

    def attackers(self, exp: Any, keep: list[str]) -> list[str]:
        """`keep`, unless the experiment's attackers' runtime cannot run every attacker."""
        other = getattr(exp, "attacker_runtime", None)
        if other is None or not keep:
            return keep
        here = self.here
        why = (
            f"{other} is not available here"
            if other not in here
            else next(
                (
                    f"{other} cannot run {w}: {r}"
                    for w in exp.attacker_workloads()
                    if (r := here[other].cannot_run(w))
                ),
                None,
            )
        )
        if why is None:
            return keep
        if not self.skip:
            raise SpecError(f"{exp.type}: attacker_runtime {why}")
        self.skipped.append(f"{exp.type}: attacker_runtime {why}")
        return []

    def result(self, exps: list[Any]) -> tuple[Plan, dict[str, str], list[str]]:
        """(the plan to run, its runtimes' versions, what was skipped and why)."""
        plan, skipped = self.plan, self.skipped
        for (label, why), parts in self.cannot.items():
            skipped.append(f"{label} skips {', '.join(dict.fromkeys(parts))}: {why}")
        if self.skip:
            left = [r for r in plan.spec.runtimes if r in self.here]
            if not left:
                raise RuntimeUnavailable(
                    f"{plan.spec.name}: none of its runtimes can run here ({'; '.join(skipped)})"
                )
            spec = plan.spec.model_copy(update={"runtimes": left, "experiment": exps})
            plan = plan.narrowed(spec)
        return plan, self.versions, skipped


def named_runtimes(plan: Plan) -> dict[str, dict[str, Any]]:
    """What each of the plan's named runtimes stood for, for the run's record (its driver,
    options and the files they name: `RuntimePlan.record`)."""
    return {label: r.record() for label, r in plan.runtimes.items() if r.named}


def not_run(asked: Plan, runs: Plan) -> list[dict[str, str]]:
    """Each guest the spec brings (`brings`) that no runtime of the run stands for, for
    the run's record: the guest, the study that compared it, why it did not run, what
    building it needs (where no image was given) and where the docs say how. `asked`:
    the plan as given; `runs`: what of it runs here (preflight's narrowing of it)."""
    spec = asked.spec
    out = []
    for b in spec.brings:
        if any(b.stood_for_by(r.driver, r.options, r.stands_for) for r in runs.runtimes.values()):
            continue
        reason = why_not_run(b, asked)
        record = {"guest": b.guest, "study": brings.study_code(spec.study), "reason": reason}
        if reason == brings.NO_IMAGE:  # what building one needs, where none was given
            record["builds"] = b.builds
        out.append({**record, "see": b.see})
    return out


def why_not_run(b: brings.Brought, asked: Plan) -> str:
    """Why no runtime stood for `b` in a run of `asked`: its runtimes were skipped here
    (preflight says why), its runtimes' tables are not among the run's runtimes
    (`--runtimes`), or no image was given."""
    skipped = [
        label
        for label, r in asked.runtimes.items()
        if b.stood_for_by(r.driver, r.options, r.stands_for)
    ]
    if skipped:
        return f"{_its(skipped, 'was', 'were')} skipped here"
    left_out = [
        label
        for label, t in asked.spec.runtime.items()
        if label not in asked.runtimes
        and b.stood_for_by(t.driver or label, t.model_extra or {}, t.stands_for)
    ]
    if left_out:
        return f"{_its(left_out, 'is', 'are')} not among the run's runtimes"
    return brings.NO_IMAGE


def _its(labels: list[str], one: str, more: str) -> str:
    """`its runtime uk was` or `its runtimes uk, uk2 were`."""
    if len(labels) == 1:
        return f"its runtime {labels[0]} {one}"
    return f"its runtimes {', '.join(labels)} {more}"


def not_run_line(entry: dict[str, Any]) -> str:
    """A guest the run's study compared that no runtime of the run stood for (an entry of
    the run's `not_run`), as the run, `show` and the report say it: `includeos (a guest
    S2 compared): no image given; it builds only through Nix (IncludeOS v0.16+); see
    docs/images.md#presets`."""
    study = entry.get("study")
    who = f"a guest {study} compared" if study else "a guest the study compared"
    text = f"{entry.get('guest')} ({who}): {entry.get('reason')}"
    if entry.get("builds"):  # said where no image was given
        text += f"; it {entry['builds']}"
    return text + (f"; see {entry['see']}" if entry.get("see") else "")


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
