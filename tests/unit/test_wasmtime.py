"""The wasmtime driver's choices without starting it: which workloads have WASI builds,
how it reads wasmtime's version, and that set-up built every module it names (guest/'s
Makefile, into the cache; its lifecycle against the real wasmtime:
tests/integration/test_runtimes.py)."""

from __future__ import annotations

import pytest

from virtbench.artifacts.rootfs import WASM_PROGRAMS
from virtbench.errors import VirtbenchError
from virtbench.paths import Paths
from virtbench.runtimes.process.wasmtime import Wasmtime, version_of

GUEST_BUILD = Paths.from_env().cache / "guest-build"  # where set-up builds them


@pytest.mark.parametrize("workload", ["hello", "sleep", "beat", "stream"])
def test_the_programs_with_a_wasi_build_run(workload):
    assert Wasmtime.cannot_run(workload) is None


@pytest.mark.parametrize("workload", ["nginx", "redis", "sqlite", "syscall"])
def test_others_say_why_not(workload):
    why = Wasmtime.cannot_run(workload)
    assert why is not None and "no sockets" in why and "vb-sleep" in why, why


def test_version_is_read_and_a_stranger_is_an_error(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.write_text("#!/bin/sh\necho 'wasmtime 49.0.3 (f96eabaa1 2026-10-14)'\n")
    bad.write_text("#!/bin/sh\necho 'usage: something else' >&2\nexit 2\n")
    for f in (good, bad):
        f.chmod(0o755)
    assert version_of(str(good)) == "49.0.3"
    with pytest.raises(VirtbenchError, match="usage: something else"):
        version_of(str(bad))


def test_every_wasi_module_was_built():
    for program in WASM_PROGRAMS:
        module = GUEST_BUILD / "wasm" / f"{program}.wasm"
        assert module.read_bytes()[:4] == b"\0asm", module
