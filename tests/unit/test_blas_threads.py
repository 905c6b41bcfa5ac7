"""virtbench's processes and numpy's BLAS threads."""

import os
import subprocess
import sys


def test_numpys_blas_runs_one_thread_unless_the_user_set_it():
    """virtbench's processes run side by side (a site's workers, a helper): OpenBLAS's
    spinning threads took a third of their CPU. One thread, unless set otherwise; and
    what virtbench starts does not inherit the setting (a workload runs as it would)."""
    code = (
        "import virtbench, numpy, ctypes, glob, os\n"
        "libs = os.path.join(os.path.dirname(numpy.__file__), '..', 'numpy.libs')\n"
        "lib = ctypes.CDLL(glob.glob(os.path.join(libs, 'libscipy_openblas*.so'))[0])\n"
        "print(lib.scipy_openblas_get_num_threads64_(), os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    two = str(min(2, os.cpu_count() or 1))
    for given, want in ((None, "1 None"), ("2", f"{two} 2")):
        run_env = env if given is None else {**env, "OPENBLAS_NUM_THREADS": given}
        got = subprocess.run(
            [sys.executable, "-c", code], env=run_env, capture_output=True, text=True, check=True
        )
        assert got.stdout.strip() == want
