"""`crun`: the OCI runtime in C, on bundles virtbench writes.

crun refuses a cgroup v1/v2 hybrid layout unless the hugetlb v1 controller is mounted;
`virtbench setup` mounts it, and `available()` says so when it is missing.
"""

from virtbench.host import cgroups
from virtbench.runtimes.base import Availability
from virtbench.runtimes.oci.base import OciOptions, OciRuntime


class Crun(OciRuntime):
    name = "crun"
    typical_launch_s = 0.04  # start + stop here without earlier boots
    binary = "crun"
    package = "crun"
    description = "OCI runtime (C), bundle from the artifact rootfs"

    @classmethod
    def available(cls, options: OciOptions | None = None) -> Availability:
        avail = super().available(options)
        if avail.ok and cgroups.Layout.detect().hybrid_without_hugetlb:
            return Availability(
                False,
                version=avail.version,
                reason="cgroup v1 without the hugetlb controller mounted (crun refuses it)",
                fix="virtbench setup",
            )
        return avail
