"""`virtbench run ...` as a user types it, from a benchmark of virtbench itself.

The run is a child process in its own process group, with its output in a file. On
Ctrl-C (or an error here) it is not killed: it gets one SIGINT, which it handles by
stopping every instance it started, and is waited for, so the benchmark leaves nothing
behind. (Its own group: a terminal's Ctrl-C would reach it too, and a second SIGINT
while the run's experiment is still stopping its instances cuts that short.)
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from virtbench.run.teardown import uninterruptible
from virtbench.store import Store
from virtbench.store.records import Sample


def run(args: list[str], results: Path) -> str:
    """Run `virtbench run ARGS --results RESULTS` to completion; its run id. Exits with
    the run's output if it failed."""
    cmd = [sys.executable, "-m", "virtbench.cli", "run", *args, "--results", str(results)]
    out = results / "virtbench-run.out"
    with open(out, "w") as fh:
        child = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, process_group=0)
    try:
        rc = child.wait()
    except BaseException:
        with uninterruptible():  # let it remove its instances, however long that takes
            if child.poll() is None:
                child.send_signal(signal.SIGINT)
            child.wait()
        print(f"virtbench run stopped (status {child.returncode})", file=sys.stderr, flush=True)
        raise
    text = out.read_text(errors="replace")
    found = re.search(r"run ([a-z0-9]{6}) started", text)
    if rc != 0 or found is None:
        raise SystemExit(f"virtbench run failed ({rc}): {text[-800:]}")
    return found.group(1)


def samples_of(spec_text: str) -> list[Sample]:
    """The samples of `virtbench run` of the spec `spec_text`, in a results store of its
    own, removed after."""
    with tempfile.TemporaryDirectory(prefix="vb-bench-") as tmp:
        path = Path(tmp) / "spec.toml"
        path.write_text(spec_text)
        run_id = run([str(path)], Path(tmp))
        return Store(Path(tmp)).samples(run_id)
