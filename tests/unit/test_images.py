"""Images built elsewhere: named runtimes in a spec, what an image serves and on which
port, the presets' command lines, and the run's record of which files each named runtime
stood for (their instances coming up or failing: test_image_boots.py)."""

from __future__ import annotations

import hashlib
import subprocess
import typing
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from virtbench import runtimes, spec
from virtbench.errors import SpecError
from virtbench.run.preflight import named_runtimes
from virtbench.runtimes.base import Instance, InstanceSpec
from virtbench.runtimes.vm import guest as vm_guest
from virtbench.runtimes.vm import image as vm_image
from virtbench.runtimes.vm import presets
from virtbench.runtimes.vm.guest import VmOptions, image_cannot_run
from virtbench.spec.resolved import resolve


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    k = tmp_path / "nginx.elf"
    k.write_bytes(b"\x7fELF" + b"u" * 4096)
    return k


def image_spec(kernel: Path, **extra: object) -> dict:
    return {
        "name": "images",
        "runtimes": ["uk-nginx", "crun"],
        "runtime": {
            "qemu": {"vcpus": 2},
            "uk-nginx": {
                "driver": "qemu:q35:tcg",
                "guest": "image",
                "kernel": str(kernel),
                "serves": "http",
                "port": 8080,
                "preset": "unikraft",
                "memory_mib": 128,
                **extra,
            },
        },
        "experiment": [{"type": "throughput", "workloads": ["nginx"], "runtimes": ["uk-nginx"]}],
    }


def test_a_named_runtime_is_its_driver_with_options_of_its_own(kernel):
    s = spec.parse(image_spec(kernel), "t.toml")
    assert s.named == {"uk-nginx": "qemu:q35:tcg"}
    got = resolve(s).runtimes
    assert got["uk-nginx"].driver == "qemu:q35:tcg" and got["crun"].driver == "crun"
    assert got["uk-nginx"].named and not got["crun"].named
    opts = got["uk-nginx"].options
    assert opts["vcpus"] == 2 and opts["variant"] == "q35:tcg"  # [runtime.qemu], then its own
    assert opts["serves"] == "http" and opts["port"] == 8080
    assert got["uk-nginx"].instance.memory_mib == 128
    cls = runtimes.get("qemu:q35:tcg")
    rt = got["uk-nginx"].create(SimpleNamespace())
    assert rt.label == "uk-nginx" and rt.name == "qemu" and isinstance(rt, cls)
    assert rt.serves.port("nginx") == 8080 and rt.serves.port("http-fixed") == 8080
    assert rt.serves.port("redis") is None  # not what it serves: the workload's own port
    assert rt.effective_network("none") == "bridge"  # its clients reach it there


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"runtimes": ["uk-ngnix"]}, "runtimes[0]: unknown runtime 'uk-ngnix'"),
        ({"runtime": {"Uk": {"driver": "qemu"}}}, "runtime.Uk: is not a runtime name"),
        ({"runtime": {"crun": {"driver": "qemu"}}}, "runtime.crun: is a built-in runtime"),
        ({"runtime": {"x": {"driver": "qemu:pc"}}}, "runtime.x: driver 'qemu:pc': unknown variant"),
        (
            {"runtime": {"x": {"driver": "qemu:q35", "variant": "microvm"}}},
            "runtime.x.variant: is set by its driver 'qemu:q35'",
        ),
        ({"runtime": {"x": {"driver": "crun", "guest": "image"}}}, "runtime.x.guest: unknown key"),
        (
            {"experiment": [{"type": "boot", "runtimes": ["nope-x"]}]},
            "experiment[0].runtimes[0]: unknown runtime 'nope-x'",
        ),
        (
            {"experiment": [{"type": "isolation", "worker": "nginx", "attacker_runtime": "runc"}]},
            "experiment[0].attacker_runtime: 'runc' is not one of runtimes (uk-nginx, crun)",
        ),
    ],
)
def test_named_runtime_mistakes_are_one_line_naming_the_field(kernel, change, said):
    data = image_spec(kernel)
    for key, value in change.items():
        data[key] = {**data[key], **value} if key == "runtime" else value
    with pytest.raises(SpecError) as err:
        spec.parse(data, "t.toml")
    msg = str(err.value)
    assert msg.startswith("t.toml: ") and said in msg and "\n" not in msg, msg


def test_what_an_image_runs(kernel):
    serving = VmOptions(guest="image", kernel=kernel, serves="http")
    assert serving.serve_port == 80  # the usual port when the spec gives none
    for workload in ("nginx", "http-fixed", "sleep", "hello"):
        assert image_cannot_run(workload, serving) is None, workload
    assert "serves http: it runs nginx, http-fixed" in (image_cannot_run("redis", serving) or "")
    silent = VmOptions(guest="image", kernel=kernel)
    assert image_cannot_run("hello", silent) is None
    assert "needs ready" in (image_cannot_run("sleep", silent) or "")
    assert 'set serves = "http"' in (image_cannot_run("nginx", silent) or "")
    with pytest.raises(ValidationError, match='serves need guest = "image"'):
        VmOptions(serves="http")
    with pytest.raises(ValidationError, match="port is the port an image serves on"):
        VmOptions(guest="image", kernel=kernel, port=80)
    assert VmOptions(guest="image", kernel=kernel, serves="udp-echo").serve_port == 7
    with pytest.raises(ValidationError, match="serves ping listens on no port: remove port"):
        VmOptions(guest="image", kernel=kernel, serves="ping", port=7)
    with pytest.raises(ValidationError, match="'gopher' is not a service an image may serve"):
        VmOptions(guest="image", kernel=kernel, serves="gopher")


def test_what_an_image_may_serve_is_declared_by_the_workloads_it_serves():
    """The services an image may declare, their conventional ports and probes come from
    the workloads (Serves.image_serves), not from a list in the VM drivers."""
    from virtbench import workloads

    found = workloads.image_services()
    assert set(found) == {"http", "redis", "memcached", "udp-echo", "ping"}
    assert found["http"].workloads == ("nginx", "http-fixed") and found["http"].port == 80
    assert found["udp-echo"].protocol == "udp" and found["redis"].port == 6379
    source = Path(vm_guest.__file__).read_text()
    assert "nginx" not in source and "6379" not in source  # named once, by their owners


def test_presets_fill_each_projects_command_line():
    v = presets.fields("vb-r1-0001", "10.77.0.5", 24, "10.77.0.1", 80, mac="06:00:0a:4d:00:05")
    assert v["netmask"] == "255.255.255.0"
    line = presets.cmdline("unikraft", "-c /nginx/conf/nginx.conf", v)
    assert line == "netdev.ip=10.77.0.5/24:10.77.0.1 -- -c /nginx/conf/nginx.conf"
    assert presets.cmdline("unikraft", "", v) == "netdev.ip=10.77.0.5/24:10.77.0.1 --"
    assert presets.cmdline("osv", "/nginx.so", v) == (
        "--console=serial --ip=eth0,10.77.0.5,255.255.255.0 --defaultgw=10.77.0.1 "
        "--nameserver=10.77.0.1 /nginx.so"
    )
    assert presets.cmdline("solo5", "--port={port}", v) == (
        "--ipv4=10.77.0.5/24 --ipv4-gateway=10.77.0.1 --port=80"
    )
    assert presets.cmdline("linux", "rdinit=/init", v) == (
        "console=ttyS0 ip=10.77.0.5::10.77.0.1:255.255.255.0:vb-r1-0001:eth0:off rdinit=/init"
    )
    assert presets.cmdline("ukl", "app", v) == (
        "console=ttyS0 net.ifnames=0 -- 10.77.0.5 06:00:0a:4d:00:05 app"
    )
    assert presets.cmdline("includeos", "", v) == "10.77.0.5 255.255.255.0 10.77.0.1"
    # no address (no bridge): the console part only; braces of its own are left alone
    none = presets.fields("vb-r1-0002", "", None, "", None)
    assert presets.cmdline("linux", "x={y}", none) == "console=ttyS0 x={y}"
    assert set(presets.PRESETS) == set(
        typing.get_args(VmOptions.model_fields["preset"].annotation)[0].__args__
    )


def test_image_command_line_and_scratch_disk_per_vmm(tmp_path, kernel):
    ctx = SimpleNamespace(paths=SimpleNamespace(cache=tmp_path), scratch=tmp_path)
    for name in ("qemu", "firecracker", "cloud-hypervisor"):
        cls = runtimes.get(name)
        opts = cls.Options(
            guest="image",
            kernel=kernel,
            serves="redis",
            preset="solo5",
            cmdline="--name={name}",
            scratch_disk_mib=8,
        )
        rt = cls(ctx, opts)  # type: ignore[arg-type]
        spec_ = InstanceSpec("vb-r1-0001", ("/usr/bin/redis-server",), tmp_path, network="none")
        inst = Instance(spec_, name, tmp_path / "vb-r1-0001.log", argv=spec_.argv, own=rt.State())
        inst.address = "10.1.0.2"
        inst.own.prefixlen, inst.own.gateway, inst.own.mac = 16, "10.1.0.1", "06:00:0a:01:00:02"
        assert (
            rt.boot.cmdline(inst) == "--ipv4=10.1.0.2/16 --ipv4-gateway=10.1.0.1 --name=vb-r1-0001"
        )
        vm_image.scratch_disk(inst, opts, tmp_path)
        disk = inst.own.scratch_disk
        assert disk.stat().st_size == 8 << 20 and disk.stat().st_blocks == 0  # sparse
        if name == "firecracker":
            drives = rt._settings(inst)
            assert drives["drives/scratch"]["path_on_host"] == str(disk)
            assert "--log-path" in rt._command(inst)  # its log is not the console
        else:
            assert str(disk) in " ".join(rt._command(inst))
        assert rt.vmm_log(inst) == tmp_path / "vb-r1-0001.vmm.log"
        disk.unlink()


def test_an_image_boots_seabios_and_every_sample_says_which_firmware(tmp_path, kernel):
    """qboot's memory map crashes real unikernels (Unikraft 0.16): an image on q35 boots
    SeaBIOS unless told otherwise, virtbench's own guests keep qboot, and the firmware is
    part of every sample's conditions."""
    ctx = SimpleNamespace(paths=SimpleNamespace(cache=tmp_path), scratch=tmp_path)
    cls = runtimes.get("qemu")
    cases = [
        ({"guest": "image", "kernel": kernel}, "seabios"),
        ({"guest": "image", "kernel": kernel, "firmware": "qboot"}, "qboot"),
        ({"guest": "minimal"}, "qboot"),
        ({"guest": "minimal", "firmware": "seabios"}, "seabios"),
    ]
    for given, used in cases:
        rt = cls(ctx, cls.Options(variant="q35:tcg", **given))  # type: ignore[arg-type]
        assert rt.conditions() == {"firmware": used}, given
        spec_ = InstanceSpec("vb-r1-0001", ("/bin/vb-hello",), tmp_path, network="none")
        inst = Instance(spec_, "qemu", tmp_path / "c.log", argv=spec_.argv, own=rt.State())
        argv = rt._command(inst)
        assert ("-bios" in argv) == (used == "qboot"), (given, argv)  # SeaBIOS: QEMU's own
    microvm = cls(ctx, cls.Options(guest="image", kernel=kernel))  # type: ignore[arg-type]
    assert microvm.conditions() == {"firmware": "qboot"}  # microvm has no other


def test_the_run_records_each_named_runtimes_files_with_their_digest(kernel):
    s = spec.parse(image_spec(kernel), "t.toml")
    record = named_runtimes(resolve(s))
    assert list(record) == ["uk-nginx"]
    assert record["uk-nginx"]["driver"] == "qemu:q35:tcg"
    k = record["uk-nginx"]["files"]["kernel"]
    assert k["sha256"] == hashlib.sha256(kernel.read_bytes()).hexdigest()
    assert k["bytes"] == kernel.stat().st_size and k["path"] == str(kernel.resolve())


def test_every_workload_an_image_may_serve_drives_the_images_port():
    from virtbench import workloads

    for service in workloads.image_services().values():
        for name in service.workloads:
            wl = workloads.get(name)
            assert wl.measures is not None and wl.serves is not None, name
            params = wl.measures.params()
            level = wl.measures.levels(params)[0]
            own = wl.serves.port
            assert str(own) in " ".join(wl.serves.client("10.0.0.2", params, level, own))
            argv = wl.serves.client("10.0.0.2", params, level, 4321)
            assert "4321" in " ".join(argv) and str(own) not in " ".join(argv), argv


def test_catalog_lists_the_presets():
    from typer.testing import CliRunner

    from virtbench.cli import app

    res = CliRunner().invoke(app, ["catalog", "--presets"])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())  # a long line (Rumprun's JSON) wraps
    for p in presets.PRESETS.values():
        assert p.name in said and " ".join(p.network.split("=")[0].split()) in said


def test_a_disk_that_boots_by_itself_gets_its_layer_and_osvs_command_line(tmp_path):
    """Given a disk and no kernel, QEMU boots the disk's own boot sector (no -kernel),
    each instance on a QCOW2 layer of its own backed by the image, and OSv's command line
    (its preset's address, then the user's) is written where OSv's loader reads it: byte
    512 of the disk, NUL-ended; the image itself is never written."""
    disk = tmp_path / "usr.raw"
    disk.write_bytes(b"\xeb" * 4096)
    cls = runtimes.get("qemu")
    opts = cls.Options(variant="q35:tcg", disk=disk, preset="osv", cmdline="/hello", guest="image")
    assert opts.boots_disk and cls.cannot_run("hello", opts) is None
    ctx = SimpleNamespace(paths=SimpleNamespace(cache=tmp_path), scratch=tmp_path)
    rt = cls(ctx, opts)  # type: ignore[arg-type]
    spec_ = InstanceSpec("vb-r1-0001", ("/bin/vb-hello",), tmp_path)
    inst = Instance(spec_, "osv", tmp_path / "c.log", argv=spec_.argv, own=rt.State())
    inst.address = "10.1.0.2"
    inst.own.prefixlen, inst.own.gateway = 16, "10.1.0.1"
    vm_image.disk_layer(inst, opts, tmp_path)
    argv = rt._command(inst)
    assert "-kernel" not in argv and "-append" not in argv and "-bios" not in argv
    layer = inst.own.disk_layer
    flat = tmp_path / "flat.raw"
    subprocess.run(["qemu-img", "convert", "-O", "raw", str(layer), str(flat)], check=True)
    line = "--console=serial --ip=eth0,10.1.0.2,255.255.0.0 --defaultgw=10.1.0.1 "
    line += "--nameserver=10.1.0.1 /hello"
    data = flat.read_bytes()
    assert data[512 : 512 + len(line) + 1] == line.encode() + b"\0"
    assert data[:512] == b"\xeb" * 512 and disk.read_bytes() == b"\xeb" * 4096
    vm_image.end(inst)
    assert not layer.exists()


def test_a_disk_boot_is_refused_where_it_cannot_be_given_what_it_needs(tmp_path):
    disk = tmp_path / "nanos.img"
    disk.write_bytes(b"\0" * 512)
    qemu = runtimes.get("qemu")
    nanos = qemu.Options(variant="q35:tcg", guest="image", disk=disk, preset="nanos")
    assert qemu.cannot_run("hello", nanos) is None
    said = qemu.cannot_run("hello", nanos.model_copy(update={"cmdline": "-p 80"}))
    assert "gets no kernel command line" in (said or "")
    microvm = qemu.Options(guest="image", disk=disk, preset="nanos")
    assert "SeaBIOS" in (qemu.cannot_run("hello", microvm) or "")
    fc = runtimes.get("firecracker")
    assert "not a disk by itself" in (
        fc.cannot_run("hello", fc.Options(guest="image", disk=disk)) or ""
    )
    with pytest.raises(ValidationError, match="or disk ="):
        qemu.Options(guest="image")
