"""Reading a host's containerd from what its CRI says (`crictl info`): its handlers and
their cgroup driver, whether its runtime and network are ready, and what the `cri`
driver then does for each handler: the host's, or the run's own with why."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.runtimes.engines import cri, host_cri


def info(network_ready: bool = True, systemd: bool = False) -> dict:
    """`crictl info`'s JSON as containerd 1.6 prints it, cut to what is read."""
    network = {"type": "NetworkReady", "status": network_ready}
    if not network_ready:
        network |= {"reason": "NetworkPluginNotReady", "message": "cni config uninitialized"}
    return {
        "status": {"conditions": [{"type": "RuntimeReady", "status": True}, network]},
        "config": {
            "sandboxImage": "registry.k8s.io/pause:3.6",
            "containerd": {
                "runtimes": {
                    "runc": {"runtimeType": "io.containerd.runc.v2", "options": {}},
                    "kata-qemu": {
                        "runtimeType": "io.containerd.kata-qemu.v2",
                        "options": {"SystemdCgroup": systemd},
                    },
                }
            },
        },
    }


def test_a_ready_host_serves_its_own_handlers_and_says_why_not_for_others():
    host = host_cri.HostCri(Path("/run/c.sock"), "1.6.20", host_cri._handlers(info()), "")
    assert host.handlers == {"runc": False, "kata-qemu": False}
    assert host_cri.handler_problem(host, "runc") is None
    assert host_cri.handler_problem(host, "kata-qemu") is None
    assert "no handler 'crun' (it has: kata-qemu, runc)" in host_cri.handler_problem(host, "crun")
    systemd = host_cri._handlers(info(systemd=True))
    placed = host_cri.handler_problem(host_cri.HostCri(host.socket, handlers=systemd), "kata-qemu")
    assert placed is not None and "through systemd" in placed


def test_a_host_whose_network_is_not_ready_is_not_used_and_the_reason_is_its_own():
    assert host_cri._not_ready(info()) == ""
    why = host_cri._not_ready(info(network_ready=False))
    assert why == "its NetworkReady condition is false (cni config uninitialized)"


def test_the_driver_takes_the_hosts_where_it_can_and_its_own_with_why_where_not(monkeypatch):
    ready = host_cri.HostCri(Path("/run/c.sock"), "1.6.20", {"runc": False, "kata": False})
    monkeypatch.setattr(cri, "which", lambda binary: f"/usr/bin/{binary}")  # crictl, containerd
    monkeypatch.setattr(host_cri, "find", lambda: ready)
    assert cri._host_for("kata") == (ready, "")
    assert cri.Cri.host_variants() == ("runc", "kata")
    avail = cri.Cri.available(cri.CriOptions(handler="kata"))
    assert avail.ok and avail.version == "containerd 1.6.20 (the host's, as configured)"
    assert cri._host_for("crun") == (None, host_cri.handler_problem(ready, "crun"))
    monkeypatch.setattr(host_cri, "find", lambda: None)
    assert cri._host_for("runc") == (None, "")
    assert cri.Cri.host_variants() == ()
    gone = cri.Cri.available(cri.CriOptions(handler="kata"))
    assert not gone.ok and "no handler 'kata' in the containerd virtbench starts" in gone.reason


def test_the_endpoint_is_the_hosts_default_a_named_socket_or_none(monkeypatch):
    monkeypatch.delenv(host_cri.ENDPOINT_ENV, raising=False)
    assert host_cri.socket() == host_cri.HOST_SOCKET
    monkeypatch.setenv(host_cri.ENDPOINT_ENV, "unix:///tmp/n/containerd.sock")
    assert host_cri.socket() == Path("/tmp/n/containerd.sock")
    monkeypatch.setenv(host_cri.ENDPOINT_ENV, "own")
    assert host_cri.socket() is None
    host_cri.find.cache_clear()
    assert host_cri.find() is None
    host_cri.find.cache_clear()


@pytest.mark.parametrize("handler", ["kata qemu", "", "-x"])
def test_a_handler_name_that_is_no_name_is_refused(handler):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        cri.CriOptions(handler=handler)
