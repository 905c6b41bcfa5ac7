"""CI's time budget (.ci/run): it says how long `make test` took, and past the budget it
fails, even when every test passed, naming the slowest tests; within it, the tests'
status is CI's. Run here on a copy, with a `make` of our own that writes the durations
scripts/test.sh would."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAKE_MAKE = """#!/bin/sh
mkdir -p .stamps
printf '12.50\\ttests/a.py::test_slow\\tcall\\n0.20\\ttests/a.py::test_quick\\tcall\\n' \\
  > .stamps/durations.tsv
exit {rc}
"""


def _ci(tmp_path: Path, budget: str, rc: int) -> subprocess.CompletedProcess[str]:
    (tmp_path / ".ci").mkdir(exist_ok=True)
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "make").write_text(FAKE_MAKE.format(rc=rc))
    (bin_dir / "make").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "VB_CI_BUDGET_MIN": budget}
    return subprocess.run(
        [str(tmp_path / ".ci" / "run")], capture_output=True, text=True, env=env, timeout=60
    )


def test_ci_holds_to_its_budget_and_names_the_slowest_tests_past_it(tmp_path: Path) -> None:
    assert "BUDGET_MIN=${VB_CI_BUDGET_MIN:-45}" in (ROOT / ".ci" / "run").read_text()
    within = _ci(tmp_path, "80", 0)
    assert within.returncode == 0, within.stdout + within.stderr
    assert "ci: make test took 0m0" in within.stdout and "(budget 80m)" in within.stdout
    assert "test_slow" not in within.stdout
    failed = _ci(tmp_path, "80", 2)
    assert failed.returncode == 2  # the tests' own failure, within the budget
    over = _ci(tmp_path, "-1", 0)  # every run is past a budget below zero
    assert over.returncode == 1, over.stdout
    lines = over.stdout.splitlines()
    assert any("over the -1-minute budget" in ln for ln in lines), over.stdout
    slowest = [ln for ln in lines if "tests/a.py" in ln]
    assert slowest[0].split() == ["12.5", "s", "call", "tests/a.py::test_slow"], slowest
