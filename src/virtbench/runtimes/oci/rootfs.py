"""An OCI bundle's root: the artifact's directory itself, read-only and shared by every
instance (`rootfs = "dir"`), or, as the container engines store containers (`"overlay"`),
an overlay per instance: the artifact as its read-only lower layer, and an upper and a
work directory of the instance's own on disk.

The overlay is mounted before the container is created (untimed, as an engine's
snapshotter prepares it before the runtime runs) at `<state>/rootfs/<instance>`, and
unmounted with the instance; its upper and work directories live in the run's data
directory (`<data>/<run>/overlay/<instance>`), on disk as an engine's are. After a crash,
`virtbench clean` unmounts what is mounted inside a run's state directory and removes its
data directory, so nothing of it stays.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from virtbench.errors import InstanceError, VirtbenchError
from virtbench.host import proc
from virtbench.runtimes.model import Instance, RuntimeContext
from virtbench.runtimes.traces import mount_points, unmount


def merged_dir(ctx: RuntimeContext, inst: Instance) -> Path:
    """Where the instance's overlay is mounted (inside the run's state directory)."""
    return ctx.scratch / "rootfs" / inst.name


def layer_dir(ctx: RuntimeContext, inst: Instance) -> Path:
    """The instance's upper and work directories' parent, on disk."""
    return ctx.paths.data_dir(ctx.run_id) / "overlay" / inst.name


def mount_overlay(ctx: RuntimeContext, inst: Instance) -> Path:
    """Mount the instance's overlay over the artifact; its mount point."""
    merged, layers = merged_dir(ctx, inst), layer_dir(ctx, inst)
    ctx.state.record("overlay", inst.name, merged=str(merged), layers=str(layers))
    for d in (merged, layers / "upper", layers / "work"):
        d.mkdir(parents=True, exist_ok=True)
    lower = inst.spec.rootfs
    opts = f"lowerdir={lower},upperdir={layers / 'upper'},workdir={layers / 'work'}"
    try:
        proc.run(["mount", "-t", "overlay", "overlay", "-o", opts, str(merged)], timeout=30)
    except VirtbenchError as exc:
        raise InstanceError(f"{inst.name}: its overlay root over {lower}: {exc}") from None
    return merged


def remove_overlay(ctx: RuntimeContext, inst: Instance) -> None:
    """Unmount the instance's overlay and remove its directories (idempotent). A mount
    that will not go is an InstanceError; `clean` finds it later by its place."""
    merged, layers = merged_dir(ctx, inst), layer_dir(ctx, inst)
    if merged.exists():
        errors = unmount([str(merged)]) if str(merged) in mount_points() else []
        if errors:
            raise InstanceError(f"{inst.name}: {errors[0]}")
        merged.rmdir()
    shutil.rmtree(layers, ignore_errors=True)
    for d in (layers.parent, layers.parent.parent):  # the run's, once empty
        try:
            d.rmdir()
        except OSError:
            break
