"""What a guest host runs: the README's set-up and main job, then a part of the suite,
as a script for its `/job/run.sh` (its output is the job's log, and the serial console's:
progress the host can follow). Its facts (init, cgroup version, AppArmor, the services
already running and their settings) are written to `out/facts` before and after, so the
host-side test can tell that virtbench left the user's services as it found them."""

from __future__ import annotations

# One fault test and the runtimes' own checks on this shape; `make test-hosts` runs more.
SHORT = (
    "tests/integration/test_runtimes.py::test_sleeper_signals_ready_and_stops_clean",
    "tests/integration/test_faults_cleanup.py::"
    "test_kill_9_then_clean_leaves_nothing_of_any_runtime_kind[runc]",
)
SHORT_FILTER = "native or runc or crun or docker-none or podman-none"
FULL = (
    "tests/integration/test_runtimes.py",
    "tests/integration/test_faults_cleanup.py",
    "tests/integration/test_engines.py",
    "tests/integration/test_cli_runs.py",
)

FACTS = r"""
facts() {
  echo "init $(cat /proc/1/comm)"
  echo "cgroup $(stat -fc %T /sys/fs/cgroup)"
  echo "apparmor $(cat /sys/module/apparmor/parameters/enabled 2>/dev/null || echo absent)"
  echo "kvm $(test -c /dev/kvm && echo yes || echo no)"
  for u in docker.service containerd.service lxd.socket podman.socket; do
    echo "service $u $(systemctl show -p ActiveState,MainPID --value $u 2>/dev/null \
      | paste -sd' ' -)"
  done
  echo "docker-config $(cat /etc/docker/daemon.json 2>/dev/null | sha256sum | cut -c1-16)"
  echo "docker-driver $(docker info -f '{{.CgroupDriver}}' 2>&1)"
  echo "units $(systemctl list-units --all --plain --no-legend 'vb-*' | grep -v vb-job \
    | wc -l)"
  echo "cgroups $(find /sys/fs/cgroup -name '*vb-*' ! -name 'vb-job*' | wc -l)"
}
"""


def script(
    tests: tuple[str, ...], keyword: str | None, demo: bool = True, runs: tuple[str, ...] = ()
) -> str:
    """The job: the set-up and `make demo` as the README says (offline: the image's
    wheels), then each of `runs` (virtbench's arguments), then `tests` (narrowed by
    `keyword`), then `virtbench clean`."""
    k = f"-k '{keyword}'" if keyword else ""
    more = "".join(
        f'step virtbench run {r}\n.venv/bin/virtbench run {r}; echo "run rc=$?"\n' for r in runs
    )
    demo_step = 'step make setup\nmake setup; echo "setup rc=$?"\n'
    if demo:  # the set-up is done by then: its time and the main job's said apart
        demo_step += (
            'step make demo\nmake demo; echo "demo rc=$?"\ncp -r results $out/results 2>/dev/null\n'
        )
    return f"""#!/bin/sh
set -u
out=/job/out
step() {{ echo "== $(date -u +%T) $*"; }}
{FACTS}
facts > $out/facts.before
cat $out/facts.before
export PIP_NO_INDEX=1 PIP_FIND_LINKS=/opt/vb-wheels
rm -rf /root/virtbench && cp -a /job/src /root/virtbench && cd /root/virtbench
{demo_step}{more}
step tests
VIRTBENCH_STRICT=1 .venv/bin/python -m pytest -p no:cacheprovider -q -ra {k} \\
  --junitxml=$out/junit.xml {" ".join(tests)}
echo "pytest rc=$?"
step clean
.venv/bin/virtbench clean; echo "clean rc=$?"
facts > $out/facts.after
cat $out/facts.after
step done
"""
