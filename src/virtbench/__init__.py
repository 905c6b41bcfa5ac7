"""virtbench: compare virtualization runtimes on one host, with honest statistics."""

import os

__version__ = "0.1.0"

# numpy's OpenBLAS starts a thread per CPU and spins them while it waits. virtbench's
# products are small and it runs its own processes side by side (a site's workers, a
# helper): their idle threads took a third of the CPU from the work. One thread each,
# unless the user set otherwise (read when numpy is first imported, so set here first).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
