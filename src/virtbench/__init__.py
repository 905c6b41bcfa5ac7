"""virtbench: compare virtualization runtimes on one host, with honest statistics."""

import os

__version__ = "0.1.0"

# numpy's OpenBLAS starts a thread per CPU and spins them while it waits. virtbench's
# products are small and it runs its own processes side by side (a site's workers, a
# helper): their idle threads took a third of the CPU from the work. One thread each,
# unless the user set otherwise. OpenBLAS reads the variable as numpy loads it; it is
# then removed again, so that what virtbench starts (a workload) runs as it would.
if "OPENBLAS_NUM_THREADS" not in os.environ:
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]
