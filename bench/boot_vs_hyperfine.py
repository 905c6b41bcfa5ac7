"""Boot-measurement overhead: virtbench's crun `spawn_to_exit` against hyperfine.

Both time `crun run` of the same bundle (the config.json virtbench's crun driver writes
for the `hello` workload, network none). Prints both medians and their ratio; the
target is a ratio <= 1.2.

    .venv/bin/python bench/boot_vs_hyperfine.py [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from virtbench.artifacts import build_minimal_rootfs
from virtbench.paths import Paths
from virtbench.runtimes.base import Instance, InstanceSpec
from virtbench.runtimes.oci import bundle_config
from virtbench.store import Store
from virtbench.workloads import hello


def hyperfine_median(bundle: Path, runs: int) -> float:
    name = "vb-bench0-hf"
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            ["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--export-json", out.name,
             f"crun run --bundle {bundle} {name}"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        data = json.loads(Path(out.name).read_text())
    return statistics.median(data["results"][0]["times"]) * 1e3


def virtbench_median(runs: int) -> tuple[float, str]:
    results = Path(tempfile.mkdtemp(prefix="vb-bench-"))
    try:
        cmd = [sys.executable, "-m", "virtbench.cli", "run", "boot", "--runtimes", "crun",
               "--workloads", "hello", "--runs", str(runs), "--warmups", "3",
               "--results", str(results)]  # fmt: skip
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rid = re.search(r"run ([a-z0-9]{6}) started", res.stdout).group(1)
        vals = [s.value for s in Store(results).samples(rid)
                if s.metric == "boot.spawn_to_exit" and not s.warmup and s.value]  # fmt: skip
        return statistics.median(vals), " ".join(cmd[2:-2])
    finally:
        shutil.rmtree(results, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    paths = Paths.from_env()
    art = build_minimal_rootfs(paths.guest_src, paths.cache)
    with tempfile.TemporaryDirectory(prefix="vb-bench-bundle-") as tmp:
        spec = InstanceSpec(name="vb-bench0-hf", argv=hello.argv("x"), rootfs=art.path)
        inst = Instance(spec=spec, runtime="crun", log_path=Path(os.devnull), argv=spec.argv)
        (Path(tmp) / "config.json").write_text(
            json.dumps(bundle_config(inst, "bench0", "none", None))
        )
        hf = hyperfine_median(Path(tmp), args.runs)
        vb, cmd = virtbench_median(args.runs)
        hf2 = hyperfine_median(Path(tmp), args.runs)  # before and after: host drift shows
    hf_mid = statistics.mean([hf, hf2])
    print(
        f"hyperfine -N --warmup 3 'crun run --bundle B ...': median {hf:.2f} ms, again {hf2:.2f} ms"
    )
    print(f"virtbench {cmd}: median spawn_to_exit {vb:.2f} ms")
    print(f"ratio virtbench/hyperfine = {vb / hf_mid:.3f} (target <= 1.2)")


if __name__ == "__main__":
    main()
