from pathlib import Path

import pytest

from virtbench import spec
from virtbench.errors import SpecError
from virtbench.spec import flags as spec_flags
from virtbench.spec.resolved import resolve

BASE = {"name": "t", "runtimes": ["crun"], "experiment": [{"type": "boot"}]}


def err(data) -> str:
    with pytest.raises(SpecError) as exc:
        spec.parse(data, "t.toml")
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_catalog_entries_all_parse():
    names = spec.catalog_names()
    assert {"quickstart", "boot", "density"} <= set(names)
    for n in names:
        s, _, where = spec.load(n)
        assert s.runtimes and s.experiment and where.endswith(f"{n}.toml")


def test_defaults_and_overrides_per_runtime():
    s = spec.parse(
        {
            **BASE,
            "runtimes": ["crun", "runc"],
            "instance": {"memory_mib": 64},
            "runtime": {"crun": {"network": "host"}},
        },
        "t",
    )
    got = resolve(s).runtimes
    assert got["crun"].instance.network == "host"
    assert got["crun"].instance.memory_mib == 64
    assert got["runc"].instance.network == "none"


def test_misspelt_key_names_file_field_and_allowed_keys():
    msg = err({**BASE, "experiment": [{"type": "boot", "rnus": 3}]})
    assert msg.startswith("t.toml: experiment[0].rnus: unknown key")
    assert "runs" in msg and "warmups" in msg


def test_unknown_runtime_lists_allowed():
    msg = err({**BASE, "runtimes": ["native", "crnu"]})
    assert msg.startswith("t.toml: runtimes[1]: unknown runtime 'crnu'")
    assert "crun" in msg and "runc" in msg


def test_unknown_top_level_and_nested_keys():
    assert err({**BASE, "runtims": ["crun"]}).startswith("t.toml: runtims: unknown key")
    assert "instance.netwrok: unknown key" in err({**BASE, "instance": {"netwrok": "none"}})
    assert "runtime.rnuc" in err({**BASE, "runtime": {"rnuc": {}}})


def test_bad_values():
    assert "instance.network: got 'wifi'" in err({**BASE, "instance": {"network": "wifi"}})
    assert "experiment[0].runs" in err({**BASE, "experiment": [{"type": "boot", "runs": 0}]})
    assert "unknown experiment type" in err({**BASE, "experiment": [{"type": "bot"}]})
    assert "missing 'type'" in err({**BASE, "experiment": [{}]})
    assert "cpuset" in err({**BASE, "instance": {"cpus": "0;rm -rf /"}})
    assert "lists a runtime twice" in err({**BASE, "runtimes": ["crun", "crun"]})


def test_load_file_and_toml_syntax_error(tmp_path: Path):
    good = tmp_path / "good.toml"
    good.write_text('name = "g"\nruntimes = ["native"]\n[[experiment]]\ntype = "density"\n')
    s, _, _ = spec.load(str(good))
    assert s.experiment[0].type == "density"
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "g"\nruntimes = [\n')
    with pytest.raises(SpecError, match=r"bad.toml: "):
        spec.load(str(bad))
    with pytest.raises(SpecError, match="no such spec file"):
        spec.load(str(tmp_path / "missing.toml"))
    with pytest.raises(SpecError, match="catalog: "):
        spec.load("no-such-entry")


def test_cli_overrides_name_the_flag():
    _, raw, where = spec.load("quickstart")
    s = spec_flags.with_overrides(raw, where, ["crun"], {"--runs": 5, "--instances": 7})
    assert s.runtimes == ["crun"]
    assert s.experiment[0].runs == 5 and s.experiment[1].runs == 5  # every experiment with runs
    assert s.experiment[1].instances == 7
    with pytest.raises(SpecError, match=r"^--runs: "):
        spec_flags.with_overrides(raw, where, None, {"--runs": 0})
    with pytest.raises(SpecError, match=r"^--runtimes: .*unknown runtime 'nope'"):
        spec_flags.with_overrides(raw, where, ["nope"], {})
    _, boot_raw, w = spec.load("boot")
    with pytest.raises(SpecError, match=r"^--instances: does not apply .*density"):
        spec_flags.with_overrides(boot_raw, w, None, {"--instances": 3})


def test_runtime_labels_with_variants_and_driver_options():
    s = spec.parse(
        {
            **BASE,
            "runtimes": ["docker", "docker:crun", "runsc"],
            "runtime": {
                "docker": {"network": "host", "image": "nginx:1.25"},
                "docker:crun": {"memory_mib": 64},
            },
        },
        "t",
    )
    got = resolve(s).runtimes
    assert got["docker"].options == {"image": "nginx:1.25"}
    assert got["docker:crun"].options == {"image": "nginx:1.25", "oci_runtime": "crun"}
    assert got["docker:crun"].instance.network == "host"  # from [runtime.docker]
    assert got["docker:crun"].instance.memory_mib == 64
    assert got["docker"].instance.memory_mib is None
    assert got["runsc"].options == {}


def test_unknown_variant_names_the_allowed_ones():
    msg = err({**BASE, "runtimes": ["docker:kata"]})
    assert msg.startswith("t.toml: runtimes[0]: unknown variant 'docker:kata'")
    assert "docker:crun" in msg and "docker:runsc" in msg
    assert "has no variants" in err({**BASE, "runtimes": ["crun:x"]})


def test_bad_driver_option_names_runtime_key_and_allowed_values():
    msg = err({**BASE, "runtime": {"docker": {"oci_runtime": "kata"}}})
    assert msg.startswith("t.toml: runtime.docker.oci_runtime:")
    assert "'kata'" in msg and "'crun'" in msg
    msg = err({**BASE, "runtime": {"runsc": {"platfrom": "kvm"}}})
    assert "runtime.runsc.platfrom: unknown key" in msg and "platform" in msg
    msg = err({**BASE, "runtime": {"lxc": {"image": "x"}}})
    assert "runtime.lxc.image: unknown key" in msg


TP = {**BASE, "experiment": [{"type": "throughput"}]}


def test_throughput_all_workloads_and_params_validated_by_the_workload():
    s = spec.parse(TP, "t")
    assert set(s.experiment[0].workloads) >= {"nginx", "redis"}
    s = spec.parse(
        {
            **BASE,
            "experiment": [
                {
                    "type": "throughput",
                    "workloads": ["nginx"],
                    "params": {"nginx": {"connections": [1, 10]}},
                }
            ],
        },
        "t",
    )
    assert s.experiment[0].params_for("nginx").connections == [1, 10]
    assert s.experiment[0].params_for("nginx").duration_s == 20  # S1's default
    bad = {"type": "throughput", "params": {"nginx": {"conections": 3}}}
    msg = err({**BASE, "experiment": [bad]})
    assert "params.nginx.conections: unknown key" in msg and "connections" in msg
    msg = err({**BASE, "experiment": [{"type": "throughput", "workloads": ["ngnix"]}]})
    assert "unknown workload 'ngnix'" in msg and "nginx" in msg
    wrong = {"type": "throughput", "workloads": ["redis"], "params": {"nginx": {}}}
    assert "params.nginx: not a workload of this experiment" in err({**BASE, "experiment": [wrong]})


def test_throughput_cli_workloads_drop_the_params_of_the_others():
    _, raw, where = spec.load("throughput")
    e = spec_flags.with_overrides(raw, where, None, {"--workloads": ["nginx"]}).experiment[0]
    assert e.workloads == ["nginx"] and set(e.params) <= {"nginx"}


def test_throughput_cli_workloads_all():
    _, raw, where = spec.load("throughput")
    s = spec_flags.with_overrides(raw, where, ["native"], {"--workloads": ["all"], "--runs": 1})
    assert "nginx" in s.experiment[0].workloads and s.experiment[0].runs == 1


def test_scalability_flags_map_as_s1_and_the_command_line_count_wins():
    _, raw, where = spec.load("d_ng_s")
    s = spec_flags.with_overrides(
        raw, where, None, {"--runs": 5, "--benchmark-times": 3, "--instances-per-benchmark": 10}
    )
    e = s.experiment[0]
    assert (e.runs, e.instances_per_benchmark, e.target) == (5, 10, 30)
    _, raw, where = spec.load("d_boot")  # the file counts steps; --max names the final count
    e = spec_flags.with_overrides(raw, where, ["crun"], {"--step": 50, "--max": 500}).experiment[0]
    assert (e.instances_per_benchmark, e.target, e.benchmark_times) == (50, 500, None)
    _, raw, where = spec.load("scalability")
    e = spec_flags.with_overrides(
        raw, where, None, {"--worker": "sqlite-bench", "--background": "redis"}
    ).experiment[0]
    assert (e.worker, e.background, e.workloads_needed()) == (
        "sqlite",
        "redis",
        ["sqlite", "redis"],
    )
    with pytest.raises(
        SpecError, match=r"^--worker: unknown worker 'ngnix' \(allowed: boot, nginx"
    ):
        spec_flags.with_overrides(raw, where, None, {"--worker": "ngnix"})
    with pytest.raises(SpecError, match=r"^--background: got 'postgres'"):
        spec_flags.with_overrides(raw, where, None, {"--background": "postgres"})
    with pytest.raises(SpecError, match=r"^--max: .*greater than or equal to 0"):
        spec_flags.with_overrides(raw, where, None, {"--max": -1})
    with pytest.raises(SpecError, match=r"^--attackers: does not apply.*isolation"):
        spec_flags.with_overrides(raw, where, None, {"--attackers": ["cpu"]})
    both = {"type": "scalability", "instances": 100, "benchmark_times": 3}
    assert "not both" in err({**BASE, "experiment": [both]})
    boot_params = {"type": "scalability", "params": {"nginx": {}}}
    assert "params.nginx: not a workload" in err({**BASE, "experiment": [boot_params]})


def test_isolation_attackers_and_placements_validated():
    _, raw, where = spec.load("isolation")
    e = spec_flags.with_overrides(
        raw,
        where,
        ["native", "crun", "runsc"],
        {"--worker": "sqlite-bench", "--attackers": ["cpu", "fork"], "--placements": ["same-cpu"]},
    ).experiment[0]
    assert (e.worker, e.attackers, e.placements, e.runs) == (
        "sqlite",
        ["cpu", "fork"],
        ["same-cpu"],
        20,
    )
    with pytest.raises(
        SpecError, match=r"^--attackers: \[1\] unknown attacker 'forks' \(allowed: cpu"
    ):
        spec_flags.with_overrides(raw, where, None, {"--attackers": ["cpu", "forks"]})
    with pytest.raises(SpecError, match=r"^--placements: .*got 'same-core'"):
        spec_flags.with_overrides(raw, where, None, {"--placements": ["same-core"]})
    assert "lists an attacker twice" in err(
        {**BASE, "experiment": [{"type": "isolation", "attackers": ["cpu", "cpu"]}]}
    )
    assert "worker: unknown worker 'boot'" in err(
        {**BASE, "experiment": [{"type": "isolation", "worker": "boot"}]}
    )
    disk = spec.parse({**BASE, "experiment": [{"type": "isolation", "attackers": ["disk"]}]}, "t")
    assert disk.experiment[0].workloads_needed() == ["sqlite", "fio"]
    # --worker replaces the catalog's worker and drops the parameters that were for it
    assert e.params == {"sqlite": {"rows": 10000}}  # sqlite-bench is sqlite: kept
    redis = spec_flags.with_overrides(raw, where, None, {"--worker": "redis"}).experiment[0]
    assert (redis.worker, redis.params) == ("redis", {})


def test_sample_interval_default_and_bounds():
    assert spec.parse(BASE, "t").sample_interval_s == 1.0
    assert spec.parse({**BASE, "sample_interval_s": 0.1}, "t").sample_interval_s == 0.1
    assert "sample_interval_s" in err({**BASE, "sample_interval_s": 0.01})


def test_the_package_gives_whole_py_s_functions_with_no_import_hook():
    """spec/__init__ imports spec/whole.py as it is imported: the experiment types' table
    bases live below them (tables/base.py), so nothing reads the types midway."""
    from virtbench.spec import whole

    assert spec.load is whole.load and spec.parse is whole.parse
    assert not hasattr(spec, "__getattr__")
