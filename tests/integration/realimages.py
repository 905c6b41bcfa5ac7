"""What the real-image tests share: finding the images a user would bring (virtbench
cannot build them; `<VIRTBENCH_REAL_IMAGES>/<kind>/`, else `<cache>/real-images/<kind>`,
skipping with what is missing), and running a spec of them beside crun to its samples,
none failed and nothing of the run left."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.integration.conftest import cli, labelled, run_id_of

from virtbench.paths import Paths
from virtbench.store import Store
from virtbench.store.records import Sample


def images(kind: str, files: tuple[str, ...]) -> Path:
    """The directory holding the real `kind` images `files`, or a skip naming them."""
    base = os.environ.get("VIRTBENCH_REAL_IMAGES") or Paths.from_env().cache / "real-images"
    where = Path(base) / kind
    missing = [f for f in files if not (where / f).is_file()]
    if missing:
        pytest.skip(
            f"no real {kind} images in {where} ({', '.join(missing)} absent; build them "
            "as docs/images.md says and set VIRTBENCH_REAL_IMAGES)"
        )
    return where


def run_beside_crun(
    env: dict[str, str], tmp_path: Path, runtimes: list[str], body: str
) -> tuple[str, list[Sample]]:
    """`virtbench run` of a spec of `runtimes` and crun on the run's bridge (crun's
    servers reached by the host's clients), its tables and experiments `body`: the run's
    id and its samples (warm-ups left out), none failed, and nothing of it left."""
    spec = tmp_path / "real.toml"
    head = f'name = "real"\nruntimes = {json.dumps([*runtimes, "crun"])}\n'
    spec.write_text(head + '[instance]\nnetwork = "bridge"\n\n' + body)
    res = cli("run", str(spec), env=env, timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    samples = [s for s in Store(tmp_path / "results").samples(rid) if not s.warmup]
    assert not [s for s in samples if s.error], [s.error for s in samples if s.error][:3]
    assert labelled(rid) == []
    state = Path(env["VIRTBENCH_STATE_DIR"])
    assert not (state / "runs" / rid).exists() and not list(state.rglob("*.disk.qcow2"))
    return rid, samples


def values(samples: list[Sample], runtime: str, metric: str) -> list[float]:
    """The values of `metric` that `runtime` measured."""
    return [
        s.value
        for s in samples
        if s.runtime == runtime and s.metric == metric and s.value is not None
    ]
