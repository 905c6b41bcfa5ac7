"""The run's own figures, whatever experiments it holds: the host's availability (the
scalability points and the host sampler: declared where they are read, in
measure/sampler.py), the artifact's size on disk (recorded by the runner, run/runner.py),
and a server's resource use over each measurement (declared where it is made, in
measure/procstat.py). Each experiment type declares its own figures in its module
(experiments/kind.py)."""

from __future__ import annotations

from virtbench.figure import Metric
from virtbench.measure import procstat, sampler

IMAGE_SIZE = Metric(
    "image_size",
    "MiB",
    "lower",
    "the artifact as the runtime keeps it on disk to start it (rootfs du, the engine's "
    "image, a VM's kernel and initramfs), once per runtime and run",
    repeated=False,
    compared=False,
    headline=False,
    side=True,
    label="image size on disk",
)

RUN: tuple[Metric, ...] = (*sampler.FIGURES, IMAGE_SIZE, *procstat.FIGURES)
