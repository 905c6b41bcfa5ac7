"""`make test` and `make demo` say where their time went: scripts/timed times a phase
(and keeps its command's exit status), scripts/phases lists the phases since the make
began, the whole, and the slowest tests."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _sh(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "scripts" / argv[0]), *argv[1:]],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=ROOT,
        timeout=60,
    )


def test_each_phase_is_timed_and_listed_with_the_whole(tmp_path: Path) -> None:
    times, durations = tmp_path / "times.tsv", tmp_path / "durations.tsv"
    env = {"VB_TIMES": str(times), "VB_DURATIONS": str(durations)}
    old = f"{int(time.time()) - 5000}\tan earlier make's phase\t3.0\t0\n"
    times.write_text(old)
    env["VB_T0"] = str(int(time.time()) - 65)
    slept = _sh("timed", "a nap", "sleep", "0.3", env=env)
    assert slept.returncode == 0 and slept.stdout.startswith("[time] a nap: 0.")
    failed = _sh("timed", "a failure", "sh", "-c", "exit 3", env=env)
    assert failed.returncode == 3 and "(exit 3)" in failed.stdout
    durations.write_text("0.50\tt.py::quick\tcall\n30.00\tt.py::slow\tsetup\n")
    said = _sh("phases", "--tests", env=env).stdout.splitlines()
    assert not any("earlier" in ln for ln in said), said  # not this make's
    nap = next(ln for ln in said if "a nap" in ln).split()
    assert 0.3 <= float(nap[-2]) < 5, nap
    assert any("a failure" in ln and "(failed)" in ln for ln in said), said
    whole = next(ln for ln in said if "in all" in ln)
    assert "(1m0" in whole or "(1m1" in whole, whole
    tests = said[said.index("--- the 20 slowest tests ---") + 1 :]
    assert tests[0].split() == ["30.0", "s", "setup", "t.py::slow"], tests
