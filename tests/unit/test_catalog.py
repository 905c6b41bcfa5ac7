"""The catalog: an entry per study with its quick form, S1's spellings, the estimate, and
a study that skips what the host cannot run and says why (`virtbench catalog`'s listing:
test_catalog_listing.py)."""

from __future__ import annotations

import pytest
from tests.catalogs import STUDIES
from tests.fakehost import FakeHarness
from tests.fakeruntime import install, tmp_paths
from tests.faketruth import RuntimeTruth, Truth
from typer.testing import CliRunner

from virtbench import runtimes
from virtbench import spec as specmod
from virtbench.cli import app
from virtbench.cli import run as cli_run
from virtbench.cli import show as cli_show
from virtbench.errors import SpecError
from virtbench.experiments import estimate
from virtbench.run import plan, runner
from virtbench.run.harness import Surroundings
from virtbench.spec import flags as spec_flags
from virtbench.spec.resolved import resolve
from virtbench.store import Store


def forms(name: str) -> tuple[specmod.Spec, specmod.Spec]:
    _, raw, where = specmod.load(name)
    full = spec_flags.with_overrides(raw, where, None, {})
    return full, spec_flags.with_overrides(raw, where, None, {}, quick=True)


def shape(exp: specmod.Experiment) -> tuple:
    """What a quick form must keep: the experiment, what it measures and against what."""
    return (
        exp.type,
        tuple(getattr(exp, "workloads", ()) or ()),
        getattr(exp, "worker", None),
        getattr(exp, "background", None),
        tuple(getattr(exp, "attackers", ()) or ()),
        tuple(getattr(exp, "placements", ()) or ()),
        tuple(sorted(getattr(exp, "params", {}))),
    )


@pytest.mark.parametrize("name", STUDIES)
def test_each_study_has_an_entry_whose_quick_form_keeps_every_step_and_is_small(name):
    full, quick = forms(name)
    assert full.study.startswith(name[:2].upper() + ":") and full.unavailable == "skip"
    assert quick.form == "quick" and full.form == "full"
    assert [shape(e) for e in quick.experiment] == [shape(e) for e in full.experiment]
    for f, q in zip(full.experiment, quick.experiment, strict=True):
        assert q.runs <= f.runs
    typical = plan.total_s(resolve(quick))
    assert typical < plan.total_s(resolve(full)) and typical < 30 * 60, plan.duration(typical)


def test_s1s_code_names_are_entries_and_parts_of_the_study():
    full, _ = forms("s1-docker-unikraft")
    names = specmod.catalog_names()
    assert set(full.aliases) <= set(names)
    perf_iso = [f"{p}_{w}_perf_iso" for p in ("uk", "d") for w in ("nginx", "redis", "sqlite")]
    assert set(perf_iso) <= set(full.aliases)
    for n in perf_iso:
        spec, _, _ = specmod.load(n)
        (exp,) = spec.experiment
        assert exp.type == "isolation" and exp.worker == n.split("_")[1]
        oci = ["docker", "crun", "runc", "runsc"]  # the OCI runtimes beside Docker
        assert spec.runtimes == (["qemu"] if n.startswith("uk") else oci)
    # background instances on a bridge, as the study's were
    for n in ("d_boot", "uk_boot", "d_ng_s", "uk_ng_s", "d_re_s", "d_sq_s"):
        spec, _, _ = specmod.load(n)
        assert spec.experiment[0].background_network == "bridge", n


def test_every_entry_with_a_quick_table_validates_both_ways():
    for name in specmod.catalog_names():
        _, raw, where = specmod.load(name)
        if any(e.get("quick") for e in raw["experiment"]):
            assert forms(name)[1].form == "quick"
        else:
            with pytest.raises(SpecError, match=r"--quick: .* has no quick form"):
                spec_flags.with_overrides(raw, where, None, {}, quick=True)


def test_a_bad_quick_table_fails_when_the_spec_is_read():
    data = {
        "name": "x",
        "runtimes": ["crun"],
        "experiment": [{"type": "boot", "quick": {"runs": 0}}],
    }
    with pytest.raises(SpecError, match=r"experiment\[0\]\.quick\.runs: .*greater than"):
        specmod.parse(data, "x.toml")
    data["experiment"][0]["quick"] = {"nosuch": 1}
    with pytest.raises(SpecError, match=r"quick\.nosuch"):
        specmod.parse(data, "x.toml")


def test_quick_then_flags_and_the_final_count_given_either_way():
    full, quick = forms("s1-docker-unikraft")
    assert full.experiment[0].target == 1000 and quick.experiment[0].target == 30
    assert quick.experiment[2].params_for("nginx").duration_s == 3
    assert quick.experiment[2].params_for("nginx").connections == 30  # merged, not replaced
    _, raw, where = specmod.load("s1-docker-unikraft")
    over = spec_flags.with_overrides(raw, where, None, {"--runs": 4}, quick=True)
    assert {e.runs for e in over.experiment} == {4}  # a flag wins over the quick form


def test_s1s_runner_spellings_are_accepted(monkeypatch, tmp_path):
    got = {}

    def execute(plan, *a, **k):
        got["spec"] = plan.spec
        return "abc123", "completed"

    monkeypatch.setattr(runner, "execute", execute)
    monkeypatch.setattr(cli_run, "require_root", lambda what: None)
    monkeypatch.setattr(cli_show, "print_run", lambda *a, **k: [])
    argv = [
        "run",
        "--runs",
        "5",
        "--name",
        "uk_ng_s",
        "--benchmark_time",
        "3",
        "--instances_per_benchmark",
        "10",
        "--results",
        str(tmp_path),
    ]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 0, res.output
    (exp,) = got["spec"].experiment
    assert (exp.runs, exp.instances_per_benchmark, exp.target) == (5, 10, 30)
    res = CliRunner().invoke(
        app, ["run", "uk_ng_s", "--benchmark-times", "3", "--benchmark_time", "4"]
    )
    assert res.exit_code == 2 and "--benchmark-times: given twice" in res.output
    res = CliRunner().invoke(app, ["run", "boot", "--name", "density"])
    assert res.exit_code == 2 and "give the spec once" in res.output
    res = CliRunner().invoke(app, ["run", "boot", "--quick"])
    assert res.exit_code == 2 and "--quick: catalog/boot.toml has no quick form" in res.output


def test_the_estimate_follows_the_procedure_and_this_hosts_boots():
    spec = specmod.parse(
        {
            "name": "e",
            "runtimes": ["crun", "docker"],
            "experiment": [
                {"type": "boot", "workloads": ["hello"], "runs": 10, "warmups": 0},
            ],
        },
        "e",
    )
    steps = plan.steps(resolve(spec), {"crun": 0.02})
    assert [s.launches for s in steps] == [10, 10]
    assert steps[0].seconds == pytest.approx(10 * (0.02 + estimate.QUIET_WAIT_S))
    typical = runtimes.Drivers.installed().get("docker").typical_launch_s
    assert steps[1].seconds == pytest.approx(10 * (typical + estimate.QUIET_WAIT_S))

    class S:  # a boot sample as the store returns it
        def __init__(self, metric, value):
            self.experiment, self.metric, self.value = "boot", metric, value
            self.runtime, self.error, self.warmup = "crun", "", False

    got = plan.launch_costs(
        [S("boot.spawn_to_exit", v) for v in (10, 20, 30, 40, 50)] + [S("boot.teardown", 5)]
    )
    assert got == {"crun": pytest.approx(0.035)}
    assert plan.launch_costs([S("boot.spawn_to_exit", 10)]) == {}  # too few to say


@pytest.mark.parametrize("name", STUDIES)
def test_each_studys_quick_form_runs_on_the_fake_and_says_what_it_skipped(
    name, tmp_path, monkeypatch
):
    """The quick form through runner.execute, its runtimes replaced by fakes (which run
    hello, sleep, sqlite and attackers only): the rest is skipped with its reason in an
    event, the run completes, and every runtime that can measure something does."""
    _, raw, where = specmod.load(name)
    fakes = {r: f"f{i}" for i, r in enumerate(raw["runtimes"])}
    world = install(Truth({f: RuntimeTruth() for f in fakes.values()}, seed=3))
    raw = {**raw, "runtimes": list(fakes.values()), "instance": {"network": "none"}, "runtime": {}}
    raw["experiment"] = [
        {
            k: ([fakes[r] for r in v] if k == "runtimes" else v)
            for k, v in e.items()
            if k != "background_network"
        }
        for e in raw["experiment"]
    ]
    for e in raw["experiment"]:  # the fake host's memory and attackers hold still at once
        e["quick"] = {
            **e.get("quick", {}),
            **({"memory_settle_s": 0} if "memory_settle_s" in e.get("quick", {}) else {}),
            **({"settle_s": 0} if e["type"] == "isolation" else {}),
        }
    spec = spec_flags.with_overrides(raw, where, None, {}, quick=True, drivers=world.drivers)
    store = Store(tmp_path / "results")
    run_id, status = runner.execute(
        resolve(spec),
        Surroundings(store, tmp_paths(tmp_path), lambda m: None, FakeHarness(world, tmp_path)),
    )
    assert status == "completed"
    events = [m for _, _, m in store.events(run_id)]
    samples = store.samples(run_id)
    measured = {
        (x.experiment, x.params.get("experiment_index", 0))
        for x in samples
        if not x.error and x.experiment != "image"
    }
    fake_can = {"boot", "density", "scalability", "isolation"}
    for i, exp in enumerate(spec.experiment):
        runs_here = exp.type in fake_can and all(
            w in ("hello", "sleep", "sqlite") or w.startswith("attacker ")
            for w in exp.instance_workloads()
        )
        if runs_here:  # each experiment measured itself, not taken for an earlier one's
            assert (exp.type, i) in measured, (i, exp.type, events)
        else:
            assert any(m.startswith("skipped: ") and exp.type in m for m in events), events
    assert world.running == {}
    store.close()


def test_a_part_for_runtimes_the_run_lacks_is_skipped_and_said_and_resumes(tmp_path, monkeypatch):
    """s3's min_memory runs on qemu only: with `--runtimes` naming other runtimes it is
    skipped with that reason; the stored spec (a study's with an emptied runtimes list)
    parses again, as a resume reads it."""
    world = install(Truth({"fa": RuntimeTruth()}, seed=1))
    data = {
        "name": "part",
        "runtimes": ["fa"],
        "experiment": [
            {"type": "boot", "workloads": ["hello"], "runs": 1, "warmups": 0},
            {"type": "boot", "workloads": ["hello"], "runs": 1, "warmups": 0, "runtimes": ["qemu"]},
        ],
    }
    spec = specmod.parse(data, "part.toml", world.drivers)
    store = Store(tmp_path / "results")
    run_id, status = runner.execute(
        resolve(spec),
        Surroundings(store, tmp_paths(tmp_path), lambda m: None, FakeHarness(world, tmp_path)),
    )
    assert status == "completed"
    events = [m for _, _, m in store.events(run_id)]
    assert "skipped: boot: it runs on qemu, which this run does not" in events
    emptied = [data["experiment"][0], {**data["experiment"][1], "runtimes": []}]
    skipped = specmod.parse(
        {**data, "unavailable": "skip", "experiment": emptied}, "stored", world.drivers
    )
    assert resolve(skipped).parts[1].runtimes == ()
    store.close()


def test_run_plan_says_what_would_run_and_starts_nothing(tmp_path, monkeypatch):
    """`run SPEC --plan`: each experiment on each runtime with its instance starts and an
    estimate, the sum, and nothing started or stored (no root needed either)."""
    started = []
    monkeypatch.setattr(runner, "execute", lambda *a, **k: started.append(a))
    monkeypatch.setattr(cli_run, "require_root", lambda what: started.append(what))
    argv = ["run", "quickstart", "--runs", "3", "--plan", "--results", str(tmp_path / "res")]
    res = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "plan: quickstart on native, runc, crun (nothing is started)" in res.output
    assert "boot on crun:" in res.output and "instance starts" in res.output
    assert "in all: 6 steps" in res.output and not started
    assert not (tmp_path / "res").exists()


def test_every_driver_declares_its_typical_launch_and_the_estimate_reads_it():
    """A driver's typical start + stop is declared by the driver, once: the estimate of a
    runtime this host never booted reads it, not a list beside the registry."""
    drivers = runtimes.Drivers.installed()
    declared = {name: drivers.get(name).typical_launch_s for name in drivers.names()}
    assert all(0 < s <= 5 for s in declared.values()), declared
    assert declared["crun"] < declared["docker"] < declared["lxd"]
    spec = specmod.parse(
        {
            "name": "t",
            "runtimes": ["lxd"],
            "experiment": [{"type": "boot", "workloads": ["hello"], "runs": 4, "warmups": 0}],
        },
        "t",
    )
    (step,) = plan.steps(resolve(spec), {})
    assert step.seconds == pytest.approx(4 * (declared["lxd"] + estimate.QUIET_WAIT_S))
