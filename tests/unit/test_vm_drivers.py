"""The qemu driver's options and labels, and which workloads its minimal guest runs."""

import pytest
from pydantic import ValidationError

from virtbench import runtimes
from virtbench.runtimes.qemu import QemuOptions
from virtbench.runtimes.vm import guest_mode


def options(label: str) -> QemuOptions:
    return runtimes.get(label).Options(**runtimes.options_for(label, {}))


def test_labels_pick_machine_and_accel():
    assert (options("qemu").machine, options("qemu").accel) == ("microvm", "kvm")
    assert (options("qemu:q35").machine, options("qemu:q35").accel) == ("q35", "kvm")
    tcg = options("qemu:q35:tcg")
    assert (tcg.machine, tcg.accel) == ("q35", "tcg")
    with pytest.raises(ValueError, match="unknown variant 'qemu:pc'"):
        runtimes.check_label("qemu:pc")
    with pytest.raises(ValidationError, match="machine"):
        QemuOptions(variant="q35:hvf")


def test_minimal_guest_modes_and_refusals():
    assert guest_mode(("/bin/vb-hello",)) == "hello"
    assert guest_mode(("/bin/vb-ready", "{probe}", "vb-x-1", "/bin/vb-sleep")) == "sleep"
    assert guest_mode(("/usr/sbin/nginx",)) is None
    cls = runtimes.get("qemu")
    assert cls.cannot_run("hello") is None and cls.cannot_run("sleep") is None
    assert "hello and sleep" in (cls.cannot_run("nginx") or "")
