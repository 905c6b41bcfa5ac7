"""`runc`: the reference OCI runtime (Go), on bundles virtbench writes."""

from virtbench.runtimes.oci.base import OciRuntime


class Runc(OciRuntime):
    name = "runc"
    typical_launch_s = 0.06  # start + stop here without earlier boots
    binary = "runc"
    package = "runc"
    description = "OCI runtime (Go), bundle from the artifact rootfs"
