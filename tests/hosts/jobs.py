"""What a guest host runs: the README's set-up (and, in full, its main job), virtbench runs,
then a part of the suite, as a script for its `/job/run.sh` (its output is the job's log,
and the serial console's: progress the host can follow). Its facts (init, cgroup version,
AppArmor, the services already running and their settings, what virtbench left) are
written to `out/facts.before` and `out/facts.after`, so that the host-side test can tell
that virtbench left the user's services as it found them and nothing of its own."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Job:
    """One guest host's work: `make demo` or only the set-up, `virtbench run` arguments,
    the tests (narrowed by a -k expression); `fresh`: the set-up from nothing, without the
    venv and wasmtime the image carries (image.py); `programs`: the guest programs built
    on this host (Debian 12's compilers, as the guest's) put where runs take them, so
    that the set-up finds them built (under emulation their compiling takes minutes);
    `crash`: a run killed with SIGKILL once two of its instances run, which the job's
    `clean` must find crashed and remove; `task`: its runs take the task workload's
    project, fetched on this host for the guest's Python and carried to the guest's
    cache (virtbench fetches it from PyPI, which the guest cannot reach)."""

    demo: bool
    runs: tuple[str, ...]
    tests: tuple[str, ...]
    keyword: str | None = None
    fresh: bool = False
    programs: bool = False
    crash: str | None = None  # `virtbench run` arguments of a run killed amid its pile-up
    task: bool = False

    def script(self) -> str:
        return script(self)


CHECKOUT = "/root/virtbench"  # where the job puts the checkout (and the image its venv)
CACHE = "/var/cache/virtbench"  # virtbench's cache there (Paths' default)
# `make test`'s form: the set-up (from the image's venv and this host's guest programs),
# doctor, a quickstart of one repetition (every launch and pile-up of it once, a pile-up
# of two), a run of runc's containers killed amid its pile-up, and `clean`, which must
# remove all of it (the facts after; `make test-hosts` runs the fault tests themselves).
SHORT = Job(
    demo=False,
    runs=("quickstart --runs 1 --warmups 0 --instances 2",),
    tests=(),
    programs=True,
    crash="density --runtimes runc --instances 40 --runs 1",
)
# `make test-hosts`: `make demo`, then of the runtimes', engines' and fault tests those
# that tell a host shape apart: every runtime's sleeper on its own network (its cgroups,
# limits, AppArmor profile and teardown), the engines' and LXC's bridges (their netns,
# links, firewall chains), kill -9 of every runtime kind then `clean`, the engines' own
# set-up and undo, and the dockerd faults (which say why where the user's dockerd runs).
# Each test is minutes under emulation: the whole integration suite would be hours.
FULL_TESTS = (
    "tests/integration/test_runtimes.py",
    "tests/integration/test_faults_cleanup.py",
    "tests/integration/test_engines.py",
)
# (youki, crictl and gVisor's shim are built by `make test` only: the guests run `make
# demo`'s set-up)
FULL_KEYWORD = (
    "not youki and not cri and (none] or docker-bridge] or podman-bridge] or lxc-bridge] "
    "or kill_9 or test_engines or dockerd)"
)
FULL = {
    "bookworm": Job(demo=True, runs=(), tests=FULL_TESTS, keyword=FULL_KEYWORD, fresh=True),
    # Debian 13's runsc (2024) defaults to its systrap platform: the sandbox questions on it
    "trixie": Job(
        demo=True,
        runs=("sandbox --quick --runtimes runsc:systrap",),
        tests=FULL_TESTS,
        keyword=FULL_KEYWORD,
        fresh=True,
        task=True,
    ),
}

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
  echo "netns $(ip netns list | grep -c '^vb-')"
  echo "links $(ip -o link show | grep -c ': vb-')"
  echo "mounts $(grep -c /run/virtbench/ /proc/self/mounts)"
  echo "containers $( (runc list -q; crun list -q) 2>/dev/null | grep -c '^vb-')"
  echo "runs $(ls /run/virtbench/runs 2>/dev/null | wc -l)"
  # the firewall chains of one podman network or container (netavark's per-network
  # nv_<id>_..., CNI's CNI-<hash> and CNI-DN-<hash>; not their global chains, which
  # netavark and CNI keep once made)
  if nft list ruleset >/tmp/ruleset 2>&1; then
    echo "firewall $(grep -cE '^\s*chain (nv_|CNI-[0-9a-f]|CNI-DN-)' /tmp/ruleset)"
  else
    echo "firewall unread"
  fi
  echo "profiles $(cat /sys/kernel/security/apparmor/profiles 2>/dev/null | grep -c '^vb-')"
  echo "delegated $(systemctl list-units --all --plain --no-legend virtbench.service \
    | wc -l) $(test -d /sys/fs/cgroup/vb.slice/virtbench.service && echo 1 || echo 0)"
}
"""


def script(job: Job) -> str:
    """The job's shell script: the set-up (and `make demo`) as the README says (offline:
    the image's wheels), doctor, each run, the run killed amid its pile-up, the tests,
    then `virtbench clean`."""
    before = f"rm -rf {CHECKOUT}/.venv /usr/local/bin/wasmtime\n" if job.fresh else ""
    if job.programs:  # `make setup`'s `virtbench build` finds them newer than the sources
        before += f"mkdir -p {CACHE} && cp -a /job/guest-build {CACHE}/\n"
    if job.task:
        before += f"mkdir -p {CACHE}/task && cp -a /job/task/. {CACHE}/task/\n"
    steps = 'step make setup\nmake setup; echo "setup rc=$?"\n'
    if job.demo:  # the set-up is done by then: its time and the main job's said apart
        steps += 'step make demo\nmake demo; echo "demo rc=$?"\n'
    else:
        steps += 'step doctor\n.venv/bin/virtbench doctor; echo "doctor rc=$?"\n'
    for r in job.runs:
        steps += f'step virtbench run {r}\n.venv/bin/virtbench run {r}; echo "run rc=$?"\n'
    return f"""#!/bin/sh
set -u
out=/job/out
step() {{ echo "== $(date -u +%T) $*"; }}
{FACTS}
facts > $out/facts.before
cat $out/facts.before
export PIP_NO_INDEX=1 PIP_FIND_LINKS=/opt/vb-wheels
# as in the suite (tests/conftest.py): density's mechanics, not its memory figures
export VIRTBENCH_MEMORY_SETTLE_S=0
{before}mkdir -p {CHECKOUT} && cp -a /job/src/. {CHECKOUT}/ && cd {CHECKOUT}
{steps}
{_crash(job.crash) if job.crash else ""}
cp -r results $out/results 2>/dev/null
{_tests(job) if job.tests else ""}
step clean
.venv/bin/virtbench clean; echo "clean rc=$?"
facts > $out/facts.after
cat $out/facts.after
step done
"""


def _crash(args: str) -> str:
    """A run in the background, killed with SIGKILL once two of its instances' cgroups
    exist (`vb-<run>-0001`...; within five minutes); its id and exit status said:
    `crash <id> rc=137`."""
    return f"""step virtbench run {args}, killed amid its pile-up
.venv/bin/virtbench run {args} >/tmp/crash.log 2>&1 &
pid=$!
rid=""
n=0
while [ $n -lt 600 ] && kill -0 $pid 2>/dev/null; do
  rid=$(sed -n 's/^run \\([a-z0-9]*\\) started.*/\\1/p' /tmp/crash.log | head -1)
  up=$(find /sys/fs/cgroup -type d -name "vb-$rid-[0-9]*" | wc -l)
  [ -n "$rid" ] && [ "$up" -ge 2 ] && break
  sleep 0.5
  n=$((n + 1))
done
kill -9 $pid
wait $pid
echo "crash $rid rc=$?"
cat /tmp/crash.log"""


def _tests(job: Job) -> str:
    """The job's tests, their results in out/junit.xml."""
    k = f"-k '{job.keyword}'" if job.keyword else ""
    return f"""step tests
# every figure inside is emulated (TCG): a test gets three times the suite's 300 s
VIRTBENCH_STRICT=1 .venv/bin/python -m pytest -p no:cacheprovider -q -ra --timeout 900 {k} \\
  --junitxml=$out/junit.xml {" ".join(job.tests)}
echo "pytest rc=$?"
"""
