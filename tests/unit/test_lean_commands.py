"""The reading commands load only what they use: `show` and `compare` never draw, so
neither they nor `--help` import matplotlib (a second of start-up) or scipy (another)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fakerun import fake_run

from virtbench.store import Store

HEAVY = ("matplotlib", "scipy")
# runs the CLI in this interpreter, then says which heavy libraries it loaded
PROBE = """
import json, sys
from virtbench.cli import main
sys.argv = ["virtbench", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & set(%r))))
"""


def _loaded(*argv: str) -> list[str]:
    res = subprocess.run(
        [sys.executable, "-c", PROBE % (HEAVY,), *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_show_compare_and_help_load_neither_matplotlib_nor_scipy(tmp_path: Path) -> None:
    store = Store(tmp_path / "results")
    experiments = ("boot", "density", "throughput", "isolation")
    fake_run(store, "lean01", {"native": 1.0, "runc": 1.1, "crun": 1.05}, experiments, n=12)
    store.close()
    where = ("--results", str(tmp_path / "results"))
    assert _loaded("--help") == []
    assert _loaded("show", "lean01", *where) == []
    assert _loaded("compare", "lean01", "--runtimes", "runc,crun", *where) == []


def test_the_probe_sees_what_a_command_loads(tmp_path: Path) -> None:
    """The check above can fail: `report` draws, and loads matplotlib."""
    store = Store(tmp_path / "results")
    fake_run(store, "lean02", {"native": 1.0, "runc": 1.1}, ("boot",), n=12)
    store.close()
    out = tmp_path / "r.html"
    loaded = _loaded("report", "lean02", "-o", str(out), "--results", str(tmp_path / "results"))
    assert "matplotlib" in loaded and out.exists()
