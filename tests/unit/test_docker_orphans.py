"""A container directory that a dockerd killed mid-removal left, and no later dockerd
loads, is found by its run label and named for `virtbench clean`; a container dockerd
knows, or one not virtbench's, is not."""

from __future__ import annotations

import json
from pathlib import Path

from virtbench.runtimes.engines.dockerd import orphans


class Api:
    """What `orphans` asks of the Docker API: its data root and the containers it knows."""

    def __init__(self, root: Path, known: list[str]) -> None:
        self.root, self.known = root, known

    def info(self) -> dict:
        return {"DockerRootDir": str(self.root)}

    def containers(self, all: bool) -> list[dict]:
        assert all
        return [{"Id": cid} for cid in self.known]


def container(root: Path, cid: str, name: str, labels: dict[str, str]) -> Path:
    d = root / "containers" / cid
    d.mkdir(parents=True)
    (d / "config.v2.json").write_text(json.dumps({"Name": name, "Config": {"Labels": labels}}))
    return d


def test_only_virtbenchs_containers_dockerd_does_not_know_are_orphans(tmp_path):
    ours = {"org.virtbench.run": "abc123"}
    lost = container(tmp_path, "a" * 64, "/vb-abc123-0005", ours)
    container(tmp_path, "b" * 64, "/vb-abc123-0006", ours)  # dockerd knows it
    container(tmp_path, "c" * 64, "/someone-elses", {"x": "y"})  # not ours
    broken = tmp_path / "containers" / ("d" * 64)
    broken.mkdir()
    (broken / "config.v2.json").write_text("{not json")  # unreadable: skipped
    assert orphans(Api(tmp_path, ["b" * 64])) == {"vb-abc123-0005": lost}
    assert orphans(Api(tmp_path, ["a" * 64, "b" * 64])) == {}
