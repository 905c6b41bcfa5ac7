"""A study's guests that the user brings (`brings`, spec/brings.py): validated in one line
naming the field, filled for the studies that compared unikernels, and a run without a
runtime that stands for one records it as not run, with why, which `show`, the report,
`run --plan` and `catalog` say; a runtime that stands for it (by its preset, its driver
or its own `stands_for`) leaves nothing to say."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.catalogs import listing
from tests.fakehost import FakeHarness
from tests.fakeruntime import install, tmp_paths
from tests.faketruth import RuntimeTruth, Truth
from tests.unit.test_docs import ROOT, anchors
from typer.testing import CliRunner

from virtbench import spec as specmod
from virtbench.cli import app
from virtbench.errors import SpecError
from virtbench.run import runner
from virtbench.run.harness import Surroundings
from virtbench.run.preflight import check_available, not_run, not_run_line
from virtbench.runtimes.base import Availability
from virtbench.spec.resolved import RuntimePlan, resolve
from virtbench.store import Store

INCLUDEOS = {
    "guest": "includeos",
    "preset": "includeos",
    "builds": "builds only through Nix (IncludeOS v0.16+)",
    "see": "docs/images.md#presets",
}
MIRAGEOS = {
    "guest": "mirageos",
    "preset": "solo5",
    "drivers": ["solo5-hvt", "solo5-spt"],
    "builds": "builds only through opam",
}
SAID = (
    "not run: includeos (a guest S2 compared): no image given; it builds only through Nix "
    "(IncludeOS v0.16+); see docs/images.md#presets"
)


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    k = tmp_path / "service.elf"
    k.write_bytes(b"\x7fELF" + b"i" * 4096)
    return k


def study(runtimes: list[str], **extra: object) -> dict:
    return {
        "name": "s2-mine",
        "study": "S2: KVM vs Docker vs the IncludeOS unikernel",
        "unavailable": "skip",
        "runtimes": runtimes,
        "brings": [INCLUDEOS],
        "experiment": [{"type": "boot", "workloads": ["hello"], "runs": 2, "warmups": 0}],
        **extra,
    }


def image(kernel: Path, **options: object) -> dict:
    return {"driver": "qemu:q35:tcg", "guest": "image", "kernel": str(kernel), **options}


@pytest.mark.parametrize(
    ("brings", "runtime", "said"),
    [
        ([{"guest": "includeos"}], {}, "brings[0].builds: Field required"),
        ([{**INCLUDEOS, "guest": "IncludeOS"}], {}, "brings[0].guest: 'IncludeOS' is not a"),
        ([{**INCLUDEOS, "preset": "nix"}], {}, "brings[0].preset: got 'nix', expected"),
        ([{**MIRAGEOS, "drivers": ["hvt"]}], {}, "brings[0].drivers[0]: 'hvt' is not a driver"),
        ([{**INCLUDEOS, "why": "x"}], {}, "brings[0].why: unknown key (allowed: guest, preset"),
        ([INCLUDEOS, INCLUDEOS], {}, "brings[1].guest: 'includeos' is brought twice"),
        ([{**INCLUDEOS, "see": "https://x.org"}], {}, "brings[0].see: 'https://x.org' is not a"),
        ([{**INCLUDEOS, "builds": "a\nb"}], {}, "brings[0].builds: one line"),
        ([], {"crun": {"stands_for": "osv"}}, "runtime.crun.stands_for: 'osv' is not a guest"),
    ],
)
def test_a_bad_brings_or_stands_for_is_one_line_naming_the_field(brings, runtime, said):
    data = {**study(["crun"]), "brings": brings, "runtime": runtime}
    with pytest.raises(SpecError) as err:
        specmod.parse(data, "s2.toml")
    line = str(err.value)
    assert line.startswith(f"s2.toml: {said}") and "\n" not in line, line


def test_the_studies_bring_the_unikernels_they_compared_and_the_docs_say_how():
    expected = {
        "s1-docker-unikraft": {"unikraft": "unikraft"},
        "s2-kvm-docker-includeos": {"includeos": "includeos"},
        "s3-lightweight-survey": {"osv": "osv", "rumprun": "rumprun", "mirageos": "solo5"},
    }
    for name, guests in expected.items():
        spec = specmod.load(name)[0]
        assert {b.guest: b.preset for b in spec.brings} == guests, name
    mirage = next(b for b in specmod.load("s3-lightweight-survey")[0].brings if b.preset == "solo5")
    assert mirage.drivers == ["solo5-hvt", "solo5-spt"] and "opam" in mirage.builds
    includeos = specmod.load("s2-kvm-docker-includeos")[0].brings[0]
    assert "only through Nix" in includeos.builds
    for part in specmod.load("s1-docker-unikraft")[0].aliases:  # S1's parts, uk_ ones bring
        brought = [b.guest for b in specmod.load(part)[0].brings]
        assert brought == (["unikraft"] if part.startswith("uk_") else []), part
    for name in specmod.catalog_names():  # every pointer leads to a heading of the docs
        for b in specmod.load(name)[0].brings:
            page, _, heading = b.see.partition("#")
            assert (ROOT / page).is_file() and heading in anchors(ROOT / page), (name, b.see)


def test_a_runtime_stands_for_a_guest_by_its_preset_driver_or_stands_for(kernel):
    alone = resolve(specmod.parse(study(["crun"]), "t"))
    (entry,) = not_run(alone, alone)
    assert entry == {
        "guest": "includeos",
        "study": "S2",
        "reason": "no image given",
        "builds": INCLUDEOS["builds"],
        "see": INCLUDEOS["see"],
    }
    assert f"not run: {not_run_line(entry)}" == SAID
    by_preset = {"inc": image(kernel, preset="includeos")}
    by_own_word = {"inc": image(kernel, stands_for="includeos")}  # its address elsewhere
    for tables in (by_preset, by_own_word):
        plan = resolve(specmod.parse(study(["crun", "inc"], runtime=tables), "t"))
        assert not_run(plan, plan) == []
    other = {"inc": image(kernel, preset="osv")}  # an image, but of another guest
    plan = resolve(specmod.parse(study(["crun", "inc"], runtime=other), "t"))
    assert [e["reason"] for e in not_run(plan, plan)] == ["no image given"]
    tender = {"mir": {"driver": "solo5-spt", "kernel": str(kernel)}}
    mirage = {"brings": [MIRAGEOS], "runtime": tender}
    plan = resolve(specmod.parse(study(["crun", "mir"], **mirage), "t"))
    assert not_run(plan, plan) == []  # on a Solo5 tender, no preset needed


def test_a_guests_runtime_left_out_or_skipped_is_said_so(kernel, monkeypatch):
    """Its runtime not among the run's (`--runtimes`), or skipped here: said, without what
    building one needs (an image was given)."""
    tables = {"inc": image(kernel, preset="includeos")}
    left_out = resolve(specmod.parse(study(["crun"], runtime=tables), "t"))
    (entry,) = not_run(left_out, left_out)
    assert entry["reason"] == "its runtime inc is not among the run's runtimes"
    assert "builds" not in entry and "it builds" not in not_run_line(entry)

    def available(self):
        here = self.label != "inc"
        return Availability(here, version="1" if here else "", reason="" if here else "no qemu")

    monkeypatch.setattr(RuntimePlan, "available", available)
    monkeypatch.setattr(RuntimePlan, "cannot_run", lambda self, workload: None)
    asked = resolve(specmod.parse(study(["crun", "inc"], runtime=tables), "t"))
    runs, _, skipped = check_available(asked)
    assert list(runs.runtimes) == ["crun"] and "inc: not available here: no qemu" in skipped
    (entry,) = not_run(asked, runs)
    assert entry["reason"] == "its runtime inc was skipped here"


def run_on_fake(tmp_path: Path, **extra: object) -> tuple[Store, str, list[str]]:
    """A study that brings IncludeOS, run on two fake runtimes; (store, run id, what the
    run said)."""
    world = install(Truth({"fa": RuntimeTruth(), "fb": RuntimeTruth()}, seed=2))
    spec = specmod.parse(study(["fa", "fb"], **extra), "s2.toml", world.drivers)
    store = Store(tmp_path / "results")
    said: list[str] = []
    where = Surroundings(store, tmp_paths(tmp_path), said.append, FakeHarness(world, tmp_path))
    run_id, status = runner.execute(resolve(spec), where)
    assert status == "completed" and world.running == {}
    return store, run_id, said


def test_a_study_run_without_its_guest_records_shows_and_reports_it_as_not_run(tmp_path):
    store, run_id, said = run_on_fake(tmp_path)
    assert store.run(run_id).environment["not_run"] == [
        {
            "guest": "includeos",
            "study": "S2",
            "reason": "no image given",
            "builds": INCLUDEOS["builds"],
            "see": INCLUDEOS["see"],
        }
    ]
    assert any(line.startswith("[yellow]not run[/]: includeos (a guest S2") for line in said)
    store.close()
    results = ["--results", str(tmp_path / "results")]
    res = CliRunner().invoke(app, ["show", run_id, *results], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert SAID in " ".join(res.output.split()), res.output  # wrapped at 80 columns
    assert max(len(line) for line in res.output.splitlines()) <= 80
    page_path = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", run_id, "-o", str(page_path), *results])
    assert res.exit_code == 0, res.output
    page = page_path.read_text()
    trust = page.index("Before you trust these numbers")
    assert page.index(f'<li class="warning">{SAID}</li>') > trust
    assert "not run" not in page[page.index("<h4>Environment</h4>") :]  # not again as a fact


def test_a_study_run_with_a_runtime_standing_for_its_guest_lists_nothing_as_not_run(tmp_path):
    store, run_id, said = run_on_fake(tmp_path, runtime={"fb": {"stands_for": "includeos"}})
    assert "not_run" not in store.run(run_id).environment
    assert not any("not run" in line for line in said)
    store.close()
    results = ["--results", str(tmp_path / "results")]
    res = CliRunner().invoke(app, ["show", run_id, *results], env={"COLUMNS": "80"})
    assert res.exit_code == 0 and "not run" not in res.output, res.output


def test_catalog_says_what_each_study_expects_you_to_bring(tmp_path):
    where = ["--results", str(tmp_path)]
    res = CliRunner().invoke(app, ["catalog", *where], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    _, lines, _ = listing(res.output)
    assert lines["s2-kvm-docker-includeos"].endswith("; you bring: includeos)")
    assert lines["s3-lightweight-survey"].endswith("; you bring: osv, rumprun, mirageos)")
    assert lines["uk_ng_s"].endswith("; you bring: unikraft)")
    assert "you bring" not in lines["s5-serverless"] + lines["d_ng_s"]
    res = CliRunner().invoke(app, ["catalog", "s2-kvm-docker-includeos", *where])
    text = " ".join(res.output.split())
    assert (
        'you bring: includeos, a runtime with preset = "includeos" or stands_for = "includeos": '
        "it builds only through Nix (IncludeOS v0.16+); see docs/images.md#presets"
    ) in text, res.output
    res = CliRunner().invoke(app, ["catalog", "--presets"], env={"COLUMNS": "200"})
    assert "for the studies' guests: S2's includeos" in res.output
    assert "for the studies' guests: S3's mirageos" in res.output  # under solo5
    res = CliRunner().invoke(app, ["run", "s2-kvm-docker-includeos", "--plan", *where])
    assert res.exit_code == 0 and SAID in " ".join(res.output.split()), res.output
