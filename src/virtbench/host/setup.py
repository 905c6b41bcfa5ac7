"""`virtbench setup`: host preparation that does not survive a reboot (idempotent).

Packages are installed by scripts/install-deps.sh (make setup); this part fixes what
the running kernel needs: on a cgroup v1 hybrid layout crun refuses to run until the
hugetlb v1 controller is mounted.
"""

from __future__ import annotations

from pathlib import Path

from virtbench.host import cgroups, proc


def prepare(layout: cgroups.Layout | None = None) -> list[str]:
    """Do what is missing; return one line per action taken."""
    layout = layout or cgroups.Layout.detect()
    done = []
    if layout.hybrid_without_hugetlb:
        mnt = Path("/sys/fs/cgroup/hugetlb")
        mnt.mkdir(exist_ok=True)
        proc.run(
            ["mount", "-t", "cgroup", "-o", "hugetlb", "cgroup", str(mnt)], what="mount hugetlb"
        )
        done.append(f"mounted the cgroup v1 hugetlb controller at {mnt} (crun needs it)")
    return done
