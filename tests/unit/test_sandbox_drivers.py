"""How each driver does `exec`, `pause` and `snapshot`: the controls it declares and why
one is missing, the guest agent's replies read whole, an exec instance's guest and its
agent's channel (QEMU's port, a microVM's hybrid vsock), Firecracker's and Cloud
Hypervisor's API calls against a VMM played here, and what a VM's image size counts."""

from __future__ import annotations

import dataclasses
import re
import time
from types import SimpleNamespace

import pytest

from virtbench import runtimes, workloads
from virtbench.errors import InstanceError
from virtbench.runtimes.base import Instance, InstanceSpec
from virtbench.runtimes.vm import api as vmm_api
from virtbench.runtimes.vm.state import QemuState, VmState


def test_each_driver_declares_its_controls_and_a_missing_one_says_why(tmp_path):
    """The capability objects a driver declares: the host command its exec runs, and the
    one-line reason of one it lacks (what `exec`, `pause` and `snapshot` record)."""
    layout = SimpleNamespace(version=2, v1={})
    ctx = SimpleNamespace(layout=layout, scratch=tmp_path, paths=SimpleNamespace(cache=tmp_path))
    spec = InstanceSpec("vb-r1-1", ("/bin/vb-sleep",), tmp_path)
    inst = Instance(spec, "x", tmp_path / "log", argv=spec.argv, own=VmState())

    def driver(label):
        return runtimes.get(label)(ctx, None, label)  # type: ignore[arg-type]

    crun, lxc, fc = driver("crun"), driver("lxc"), driver("firecracker")
    assert crun.exec.problem() is None and crun.pause.problem() is None
    assert crun.exec.argv(inst, ["/bin/vb-hello"]) == ["crun", "exec", "vb-r1-1", "/bin/vb-hello"]
    assert lxc.exec.argv(inst, ["/bin/x"]) == [
        "lxc-attach",
        "-n",
        "vb-r1-1",
        "-P",
        str(tmp_path / "lxc"),
        "--",
        "/bin/x",
    ]
    fc_cls = runtimes.get("firecracker")
    minimal = fc_cls(ctx, fc_cls.Options(guest="minimal"), "firecracker")
    assert minimal.exec.problem().startswith("its guest has no exec agent: ")
    assert fc.snapshot.problem() is None and fc.snapshot.copies_problem() is None
    no_api = fc_cls(ctx, fc_cls.Options(api=False), "firecracker")
    why = "with api = false it has no API socket"
    assert no_api.snapshot.problem() == why == no_api.snapshot.copies_problem()
    qemu, nspawn = driver("qemu"), driver("nspawn")
    assert qemu.pause.problem() is None and qemu.snapshot.problem() is None
    assert nspawn.snapshot.problem() == "systemd-nspawn has no checkpoint/restore"
    assert nspawn.exec.problem() is None and nspawn.daemons.pids() == []
    bwrap = driver("bwrap")
    assert bwrap.snapshot.problem() == "bubblewrap has no checkpoint/restore"
    assert bwrap.exec.problem() is None and bwrap.daemons.pids() == []
    layout.version = 1  # the freezer the runtimes' own pause commands use, not mounted
    assert crun.pause.problem() == nspawn.pause.problem() == "the cgroup v1 freezer is not mounted"


def test_the_guest_agents_replies_are_read_whole_and_timed(tmp_path):
    """The host's side of vb-agent against a guest played on a socket pair: standard output
    in several frames, the exit status and standard error's tail; a guest that never
    answers is an error naming the agent, not an empty result."""
    import socket
    import threading

    from virtbench.runtimes.vm.agent import GuestAgent

    guest_end: list[socket.socket] = []

    class Played(GuestAgent):
        def connect(self, inst, timeout):
            host, guest = socket.socketpair()
            guest_end.append(guest)
            return host

    def guest(reply: bytes) -> None:
        while not guest_end:
            time.sleep(0.001)
        g = guest_end.pop()
        request = g.recv(1 << 16)
        assert request == b"X " + b"/bin/vb-hello\x0016\x00".hex().encode() + b"\n"
        g.sendall(reply)
        g.close()

    rt = SimpleNamespace(label="qemu:q35:tcg", options=SimpleNamespace(guest="auto"))
    agent = Played(rt)
    spec = InstanceSpec("vb-r1-1", ("/bin/vb-sleep",), tmp_path, agent=True)
    inst = Instance(spec, "qemu:q35:tcg", tmp_path / "log", argv=spec.argv, own=QemuState())
    t = threading.Thread(target=guest, args=(b"O 5\nhelloO 11\n, world!!!\nR 3 4\noops",))
    t.start()
    res = agent.run(inst, ["/bin/vb-hello", "16"], timeout=5)
    t.join()
    assert (res.status, res.stdout_bytes, res.stderr) == (3, 16, "oops") and res.ms > 0
    t = threading.Thread(target=guest, args=(b"O 5\nhel",))  # cut short: it closes
    t.start()
    with pytest.raises(InstanceError, match="exec agent: the channel closed mid-reply"):
        agent.run(inst, ["/bin/vb-hello", "16"], timeout=5)
    t.join()
    rt.options.guest = "minimal"
    assert agent.problem().startswith("its guest has no exec agent")
    plain = Instance(
        dataclasses.replace(spec, agent=False), "q", tmp_path / "l", argv=spec.argv, own=QemuState()
    )
    with pytest.raises(InstanceError, match="without its exec channel"):
        agent.run(plain, ["/bin/vb-hello"], timeout=1)


def test_an_exec_instance_on_qemu_boots_linux_with_its_agents_port(tmp_path):
    """guest = "auto" boots the minimal guest for `sleep`, but Linux (with vb-agent's
    virtio-serial port behind a unix socket) for an instance commands will run in."""
    ctx = SimpleNamespace(scratch=tmp_path, paths=SimpleNamespace(cache=tmp_path))
    qemu = runtimes.get("qemu")(ctx, runtimes.get("qemu").Options(variant="q35:tcg"), "q")
    spec = InstanceSpec("vb-r1-1", workloads.get("sleep").argv("vb-r1-1"), tmp_path)
    assert qemu.boot.guest(
        Instance(spec, "q", tmp_path / "l", argv=spec.argv, own=QemuState())
    ) == ("minimal")
    agent = dataclasses.replace(spec, agent=True)
    inst = Instance(agent, "q", tmp_path / "l", argv=spec.argv, own=QemuState())
    assert qemu.boot.guest(inst) == "linux" and qemu.exec.problem() is None
    devices = " ".join(qemu._agent_devices(inst))
    assert f"path={tmp_path / 'qmp' / 'vb-r1-1.agent'},server=on,wait=off" in devices
    assert "virtserialport,bus=vbser.0,chardev=vbagent,name=vb.agent" in devices
    image = runtimes.get("qemu").Options(guest="image", kernel=__file__)
    assert runtimes.get("qemu")(ctx, image, "i").exec.problem().startswith("its guest has no")


@pytest.mark.parametrize("label", ["firecracker", "cloud-hypervisor"])
def test_exec_into_a_microvm_goes_through_its_hybrid_vsock(label, tmp_path, monkeypatch):
    """Firecracker and Cloud Hypervisor: an exec instance's Linux guest gets a vsock device
    (its unix socket) and vb.agent=vsock:1024; the host says CONNECT 1024 to the VMM's
    socket (played here), then talks to vb-agent as on QEMU's port. A VMM that closes the
    connection (nothing listens in the guest) is an error saying so."""
    import socket
    import threading

    from virtbench.host import facts

    rt, _ = vmm(label, tmp_path)
    spec = InstanceSpec("vb-r1-2", workloads.get("sleep").argv("vb-r1-2"), tmp_path, agent=True)
    inst = Instance(spec, label, tmp_path / "log", argv=spec.argv, own=rt.State())
    assert rt.boot.guest(inst) == "linux" and " vb.agent=vsock:1024" in rt.boot.cmdline(inst)
    monkeypatch.setattr(rt.boot, "kernel", lambda inst: tmp_path / "vmlinux")  # not built here
    monkeypatch.setattr(rt.boot, "initrd", lambda inst: None)
    if label == "firecracker":
        want = {"guest_cid": 3, "uds_path": str(rt.vsock_path(inst))}
        assert rt._settings(inst)["vsock"] == want
    else:
        argv = rt._command(inst)
        assert argv[argv.index("--vsock") + 1] == f"cid=3,socket={rt.vsock_path(inst)}"
    monkeypatch.setattr(facts, "kvm_kind", lambda: "vmx")
    assert rt.exec.problem() is None
    monkeypatch.setattr(facts, "kvm_kind", lambda: "pvm")
    assert "cannot boot under this host's nested PVM KVM" in rt.exec.problem()

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(rt.vsock_path(inst)))
    server.listen(2)

    def vmm_side(agent_listens: bool) -> None:
        conn, _ = server.accept()
        with conn:
            assert conn.recv(64) == b"CONNECT 1024\n"
            if not agent_listens:
                return  # the VMM closes it
            conn.sendall(b"OK 1073741824\n")
            assert conn.recv(1 << 16).startswith(b"X ")
            conn.sendall(b"O 3\nhi\nR 0 0\n")

    t = threading.Thread(target=vmm_side, args=(True,))
    t.start()
    res = rt.exec.run(inst, ["/bin/vb-hello"], timeout=5)
    t.join()
    assert (res.status, res.stdout_bytes) == (0, 3)
    t = threading.Thread(target=vmm_side, args=(False,))
    t.start()
    with pytest.raises(InstanceError, match="CONNECT 1024: closed: no agent listening"):
        rt.exec.run(inst, ["/bin/vb-hello"], timeout=5)
    t.join()
    server.close()


class PlayedVmm:
    """A VMM's API socket played here: every call recorded as (method, path, body);
    a refusal (a body's state "Nope", or a path with "refuse") answers 400 with
    Firecracker's `fault_message` or Cloud Hypervisor's list of errors."""

    def __init__(self, sock, style="firecracker"):
        import http.server
        import json
        import socketserver
        import threading

        got = self.got = []

        class Api(http.server.BaseHTTPRequestHandler):
            def answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n)) if n else None
                got.append((self.command, self.path, body))
                refuse = "refuse" in self.path or (body or {}).get("state") == "Nope"
                if not refuse:
                    payload = b""
                elif style == "firecracker":
                    payload = json.dumps({"fault_message": "bad state"}).encode()
                else:
                    why = [
                        "Error from API",
                        "The VM could not be snapshotted",
                        "Could not get vCPU state (EINVAL)\n\nStack backtrace:\n 0",
                    ]
                    payload = json.dumps(why).encode()
                self.send_response(400 if refuse else 204)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_PUT = do_PATCH = answer

            def log_message(self, *args):
                pass

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            def get_request(self):
                conn, _ = self.socket.accept()
                return conn, ("local", 0)

        self.server = Server(str(sock), Api)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def vmm(label, tmp_path):
    cls = runtimes.get(label)
    ctx = SimpleNamespace(scratch=tmp_path, paths=SimpleNamespace(cache=tmp_path))
    rt = cls(ctx, cls.Options(), label)
    spec = InstanceSpec("vb-r1-1", workloads.get("beat").argv("vb-r1-1"), tmp_path)
    return rt, Instance(spec, label, tmp_path / "log", argv=spec.argv, own=rt.State())


def test_firecracker_pauses_and_snapshots_through_its_api(tmp_path):
    """PATCH /vm Paused/Resumed; a snapshot: paused, then a full snapshot of its state and
    memory; a restore: the new VMM loads both and resumes (a server played here); a
    refusal is an error with Firecracker's fault message."""
    fc, inst = vmm("firecracker", tmp_path)
    api = PlayedVmm(fc.api_socket(inst))
    try:
        fc.pause.pause(inst)
        assert inst.paused
        fc.pause.resume(inst)
        assert not inst.paused
        fc.snapshot.checkpoint(inst, tmp_path / "img")  # no VMM process to end here
        inst.own.restore_from = tmp_path / "img"
        fc._configure(inst)  # what a restore's new Firecracker is told
        with pytest.raises(InstanceError, match="PATCH /vm -> 400: bad state"):
            vmm_api.call_at(fc.api_socket(inst), "PATCH", "/vm", {"state": "Nope"}, "firecracker")
    finally:
        api.close()
    img = str(tmp_path / "img")
    assert api.got[:5] == [
        ("PATCH", "/vm", {"state": "Paused"}),
        ("PATCH", "/vm", {"state": "Resumed"}),
        ("PATCH", "/vm", {"state": "Paused"}),
        (
            "PUT",
            "/snapshot/create",
            {
                "snapshot_type": "Full",
                "snapshot_path": img + "/vmstate",
                "mem_file_path": img + "/memory",
            },
        ),
        (
            "PUT",
            "/snapshot/load",
            {
                "snapshot_path": img + "/vmstate",
                "resume_vm": True,
                "mem_backend": {"backend_type": "File", "backend_path": img + "/memory"},
            },
        ),
    ]


def test_cloud_hypervisor_pauses_and_snapshots_through_its_api(tmp_path, monkeypatch):
    """vm.pause/vm.resume; a snapshot: vm.pause then vm.snapshot to file://<dir>; a restore:
    a new VMM started with --restore, then vm.resume; a refusal says Cloud Hypervisor's
    chain of errors without its backtrace; under a nested PVM KVM it says it cannot."""
    from virtbench.host import facts

    ch, inst = vmm("cloud-hypervisor", tmp_path)
    monkeypatch.setattr(facts, "kvm_kind", lambda: "vmx")
    assert ch.snapshot.problem() is None and ch.snapshot.copies_problem() is None
    monkeypatch.setattr(facts, "kvm_kind", lambda: "pvm")
    assert "nested PVM KVM (KVM_GET_NESTED_STATE fails" in ch.snapshot.problem()
    argv = ch._command(inst)
    assert argv[1:3] == ["--api-socket", f"path={ch.api_socket(inst)}"] and "--kernel" in argv
    inst.own.restore_from = tmp_path / "img"
    assert ch._command(inst)[3:] == ["--restore", f"source_url=file://{tmp_path / 'img'}"]
    inst.own.restore_from = None
    api = PlayedVmm(ch.api_socket(inst), style="cloud-hypervisor")
    try:
        ch.pause.pause(inst)
        ch.pause.resume(inst)
        ch.snapshot.checkpoint(inst, tmp_path / "img")
        inst.own.restore_from = tmp_path / "img"
        ch._configure(inst)
        why = (
            "PUT /api/v1/vm.refuse -> 400: Error from API: The VM could not be "
            "snapshotted: Could not get vCPU state (EINVAL)$"
        )
        with pytest.raises(InstanceError, match=re.escape(why[:-1]) + "$"):
            vmm_api.call_at(ch.api_socket(inst), "PUT", "/api/v1/vm.refuse", None, "ch")
    finally:
        api.close()
    assert api.got[:5] == [
        ("PUT", "/api/v1/vm.pause", None),
        ("PUT", "/api/v1/vm.resume", None),
        ("PUT", "/api/v1/vm.pause", None),
        ("PUT", "/api/v1/vm.snapshot", {"destination_url": f"file://{tmp_path / 'img'}"}),
        ("PUT", "/api/v1/vm.resume", None),
    ]


def test_a_vms_image_counts_the_linux_guest_exec_boots(tmp_path, monkeypatch):
    """guest = "auto" on the minimal artifact boots the minimal guest, and Linux for exec's
    instances: the image size counts both when the run execs, the minimal kernel else."""
    rootfs = tmp_path / "rootfs-minimal-0123"
    (rootfs / "boot").mkdir(parents=True)
    (rootfs / "boot" / "vb-minikernel").write_bytes(b"k" * 8192)
    (tmp_path / "vmlinuz").write_bytes(b"l" * 65536)
    (tmp_path / "initrd").write_bytes(b"i" * 32768)
    cls = runtimes.get("firecracker")
    for runs_commands, want in ((False, 8192), (True, 8192 + 65536 + 32768)):
        ctx = SimpleNamespace(
            scratch=tmp_path,
            rootfs=rootfs,
            runs_commands=runs_commands,
            paths=SimpleNamespace(cache=tmp_path),
        )
        fc = cls(ctx, cls.Options(), "firecracker")
        monkeypatch.setattr(fc.boot, "linux", lambda r: (tmp_path / "vmlinuz", tmp_path / "initrd"))
        size, how = fc.image_size()
        assert size == want, (runs_commands, size, how)
        assert ("Linux" in how) == runs_commands


def test_youkis_listing_is_read_from_its_table_and_anything_else_is_an_error():
    from virtbench.errors import VirtbenchError
    from virtbench.runtimes.oci.youki import table_ids

    table = (
        "ID         PID    STATUS   BUNDLE  CREATED                    CREATOR\n"
        "vb-r1-1    31138  Running  /b      2026-11-27T14:51:03+00:00  root\n"
        "vb-r1-2    0      Stopped  /c      2026-11-27T14:51:04+00:00  root\n"
    )
    assert table_ids(table) == ["vb-r1-1", "vb-r1-2"]
    assert table_ids("ID    PID    STATUS   BUNDLE   CREATED   CREATOR\n") == []
    with pytest.raises(VirtbenchError, match="youki list: not its table"):
        table_ids("Error: failed to read /run/youki\n")
