"""vb-task: an agent's step on a local project, inside the instance, each step timed here.

    python3 vb-task.py --task=DIR --work=DIR --git=PATH

DIR (--task) holds `project.bundle` (a git bundle of the project), `wheels/` (pip's
wheel and every wheel the project and its tests need) and `requirements` (what its tests
install besides the project). In --work, made afresh:

  clone    git clone the bundle
  venv     python -m venv --without-pip
  install  pip (run from its wheel) installs the project, editable, and `requirements`
           from the wheels only (--no-index)
  test     the project's tests (python -m pytest -q)

Each step's time (monotonic, in this instance) and exit status is printed as it ends:

    vb-task step=<name> status=<exit> ms=<float>

then, last, `vb-task done status=<0 or the failed step's> ms=<all steps> fs=<the work
directory's file system> passed=<tests passed>`. A failed step ends the task (its output's
tail on standard error) and the task exits 1.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time


def mount_type(path):
    """The file system type of the mount that holds `path` (/proc/self/mounts)."""
    best, kind = "", "unknown"
    real = os.path.realpath(path)
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                point = parts[1].replace("\\040", " ")
                inside = real == point or real.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, parts[2]
    except OSError:
        pass
    return kind


def steps(a, work):
    """(name, argv, cwd) of each step, in order."""
    project = os.path.join(work, "project")
    py = os.path.join(work, "venv", "bin", "python")
    wheels = os.path.join(a.task, "wheels")
    pip = next(os.path.join(wheels, w) for w in os.listdir(wheels) if w.startswith("pip-"))
    with open(os.path.join(a.task, "requirements")) as f:
        extra = f.read().split()
    bundle = os.path.join(a.task, "project.bundle")
    install = [py, os.path.join(pip, "pip"), "install", "-q", "--no-index", "--no-cache-dir"]
    install += ["--disable-pip-version-check", "--find-links", wheels, "-e", project, *extra]
    return [
        ("clone", [a.git, "clone", "-q", "--template=", bundle, project], work),
        ("venv", [sys.executable, "-m", "venv", "--without-pip", os.path.join(work, "venv")], work),
        ("install", install, work),
        ("test", [py, "-m", "pytest", "-q", "-p", "no:cacheprovider"], project),
    ]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--task", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--git", required=True)
    a = p.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(os.path.join(a.work, "tmp"))
    env = {
        "PATH": os.pathsep.join([os.path.dirname(a.git), os.path.dirname(sys.executable), "/bin"]),
        "HOME": a.work,
        "TMPDIR": os.path.join(a.work, "tmp"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "LC_ALL": "C.UTF-8",
    }
    total, passed, failed = 0.0, 0, ""
    for name, argv, cwd in steps(a, a.work):
        t0 = time.monotonic_ns()
        res = subprocess.run(
            argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        ms = (time.monotonic_ns() - t0) / 1e6
        total += ms
        print(f"vb-task step={name} status={res.returncode} ms={ms:.3f}", flush=True)
        out = res.stdout.decode(errors="replace")
        if name == "test":
            m = re.search(r"(\d+) passed", out)
            passed = int(m.group(1)) if m else 0
        if res.returncode != 0:
            sys.stderr.write(out[-1500:])
            failed = name
            break
    fs = mount_type(a.work)
    status = f"failed:{failed}" if failed else "0"
    print(f"vb-task done status={status} ms={total:.3f} fs={fs} passed={passed}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
