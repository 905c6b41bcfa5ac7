"""`runc`: the reference OCI runtime (Go), on bundles virtbench writes."""

from virtbench.runtimes.oci import OciRuntime


class Runc(OciRuntime):
    name = "runc"
    binary = "runc"
    package = "runc"
    description = "OCI runtime (Go), bundle from the artifact rootfs"
