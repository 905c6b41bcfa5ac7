"""N background crun sleepers started by a plain bash loop, and removed again, for the
benchmarks of virtbench's own overhead (launch_vs_shell.py, sampler_cpu.py,
burst_vs_xargs.py, tti_vs_shell.py).

Each sleeper is what virtbench's scalability experiment starts in the background:
`vb-sleep unix:/run/vb/probe.sock NAME` in a bundle whose config.json is
virtbench's own plain one (`oci.bundle_config`: `rootfs = "dir"` and `security =
"minimal"`, which the benchmarks' specs give virtbench's side too; network "none", the
run's probe socket directory bind-mounted at /run/vb), named `vb-<run-id>-s<i>` and
recorded in a RunState ledger before anything is created.

`start()` times, from just before bash is spawned:
  - one `mkdir` of every bundle directory (the loop needs them; one process, not N),
  - per instance, in bash: the config.json written from a template with the instance's
    name substituted (a bash builtin substitution and redirection, no process), then
    `crun run -d --bundle <bundles>/<name> <name>` (crun makes the cgroups itself, at
    the config's `cgroupsPath`, exactly as it does for virtbench),
  - until the loop has returned and every instance's ready datagram has arrived at this
    process's probe listener (host monotonic clock).
The bash loop does not wait for each instance to be ready before starting the next:
a shell cannot, and that is the cheapest way to the same end state.

`stop()` removes them with a bash loop of `crun delete --force <name>`, then removes any
cgroup directory left and the bundles. Leaving the `with` block (also on Ctrl-C or an
error) stops whatever was started and sweeps the run id with `virtbench.run.cleanup`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from virtbench import naming
from virtbench.host import cgroups
from virtbench.host.state import RunState
from virtbench.measure.probe import ProbeListener
from virtbench.paths import Paths
from virtbench.run import cleanup
from virtbench.run.teardown import uninterruptible
from virtbench.runtimes.base import PROBE_MOUNT, Instance, InstanceSpec, NoState
from virtbench.runtimes.oci.base import bundle_config
from virtbench.spec import InstanceOptions
from virtbench.workloads import sleep

NAME_SLOT = "@NAME@"  # replaced by each instance's name in the config template

START_LOOP = r"""
tpl=$(<"$1"); dir=$2; shift 2
mkdir -- "${@/#/$dir/}"
for name in "$@"; do
  printf '%s' "${tpl//@NAME@/$name}" > "$dir/$name/config.json"
  crun run -d --bundle "$dir/$name" "$name" || exit 1
done
"""

# a burst: every config written first (untimed, as virtbench prepares its instances), then
# `xargs -P` runs `crun run -d` for all of them at once
BURST_PREPARE = r"""
tpl=$(<"$1"); dir=$2; shift 2
mkdir -- "${@/#/$dir/}"
for name in "$@"; do printf '%s' "${tpl//@NAME@/$name}" > "$dir/$name/config.json"; done
"""

# time to interactive one by one: every config written first (untimed), then per instance
# `crun run -d` and `crun exec` timed by bash ($EPOCHREALTIME, appended to a file after
# the exec), its output checked after the loop, and the instance deleted before the next
TTI_LOOP = r"""
tpl=$(<"$1"); dir=$2; shift 2
mkdir -- "${@/#/$dir/}"
for name in "$@"; do printf '%s' "${tpl//@NAME@/$name}" > "$dir/$name/config.json"; done
for name in "$@"; do
  t0=$EPOCHREALTIME
  crun run -d --bundle "$dir/$name" "$name" || exit 1
  crun exec "$name" /bin/vb-hello > "$dir/$name/out" || exit 1
  t1=$EPOCHREALTIME
  printf '%s %s %s\n' "$name" "$t0" "$t1" >> "$dir/tti.stamps"
  crun delete --force "$name" || exit 1
done
"""

STOP_LOOP = r"""
for name in "$@"; do crun delete --force "$name" || echo "crun delete $name failed"; done
"""


class ShellSleepers:
    """`count` crun sleepers under a fresh run id; use as a context manager."""

    def __init__(self, paths: Paths, rootfs: Path, count: int, opts: InstanceOptions) -> None:
        self.paths = paths
        self.rootfs = rootfs
        self.count = count
        self.opts = opts
        self.run_id = naming.new_run_id()
        self.names = [naming.name(self.run_id, f"s{i}") for i in range(count)]
        self.layout = cgroups.Layout.detect()
        self.state = RunState(paths.run_dir(self.run_id))
        self.bundles = self.state.dir / "bundles"
        self.log = self.state.dir / "loop.log"
        self.probe: ProbeListener | None = None
        self.started = False

    def __enter__(self) -> ShellSleepers:
        self.state.open()
        self.probe = ProbeListener(self.state.dir / "probe")
        return self

    def __exit__(self, *exc: object) -> None:
        with uninterruptible():  # the removal must finish
            try:
                if self.started:
                    self.stop()
                rest = [
                    it
                    for it in cleanup.scan(self.paths, self.run_id, self.layout, include_live=True)
                    if it.kind != "state"  # the state directory goes with state.close()
                ]
                if rest:
                    print(f"removing leftovers: {cleanup.summarize(rest)}", flush=True)
                    for error in cleanup.remove(rest, self.layout, locked=True):
                        print(f"warning: could not remove {error}", flush=True)
            finally:
                if self.probe is not None:
                    self.probe.close()
                self.state.close()

    def template(self) -> str:
        """virtbench's config.json for a background sleeper, the name left as NAME_SLOT."""
        assert self.probe is not None
        spec = InstanceSpec(
            name=NAME_SLOT,
            argv=sleep.argv(NAME_SLOT),
            rootfs=self.rootfs,
            network=self.opts.network,
            memory_mib=self.opts.memory_mib,
            cpus=self.opts.cpus,
            pids_limit=self.opts.pids_limit,
        )
        addr = f"unix:{PROBE_MOUNT}/{self.probe.unix_name}"
        inst = Instance(spec=spec, runtime="crun", log_path=self.log, own=NoState())
        inst.argv = tuple(addr if a == "{probe}" else a for a in spec.argv)
        inst.binds.append((self.probe.unix_dir, PROBE_MOUNT))
        return json.dumps(bundle_config(inst, self.run_id, spec.network, None))

    def _ledger_and_template(self) -> Path:
        """Every sleeper in the ledger (first, as virtbench does), the bundles' directory,
        and the config template's file."""
        assert self.probe is not None
        for name in self.names:
            self.state.record("bundle", name, path=str(self.bundles / name))
            self.state.record("container", name, runtime="crun")
            self.state.record("cgroup", name)
        self.bundles.mkdir()
        tpl = self.state.dir / "config.template.json"
        tpl.write_text(self.template())
        return tpl

    def start(self, timeout: float = 600) -> float:
        """Start every sleeper with the bash loop; wall seconds until all are ready."""
        tpl = self._ledger_and_template()
        argv = ["bash", "-c", START_LOOP, "bash", str(tpl), str(self.bundles), *self.names]
        self.started = True
        with open(self.log, "ab") as log:
            t0 = time.monotonic_ns()
            rc = subprocess.run(argv, stdout=log, stderr=log, timeout=timeout).returncode
            t_loop = time.monotonic_ns()
        if rc != 0:
            raise SystemExit(f"the shell loop failed: {self.log_tail()}")
        assert self.probe is not None
        t_last = t_loop
        deadline = time.monotonic() + 60
        for name in self.names:
            t = self.probe.wait(name, max(0.0, deadline - time.monotonic()))
            if t is None:
                raise SystemExit(f"{name}: no ready datagram within 60 s of the loop's end")
            t_last = max(t_last, t)
        return (t_last - t0) / 1e9

    def burst(self, timeout: float = 600) -> list[float]:
        """Start every sleeper at once with `xargs -P <count>` (configs written first,
        untimed); per instance, seconds from just before xargs is spawned to its ready
        datagram."""
        tpl = self._ledger_and_template()
        prep = ["bash", "-c", BURST_PREPARE, "bash", str(tpl), str(self.bundles), *self.names]
        subprocess.run(prep, check=True, timeout=timeout)
        argv = [
            "xargs",
            "-P",
            str(self.count),
            "-I{}",
            "crun",
            "run",
            "-d",
            "--bundle",
            f"{self.bundles}/{{}}",
            "{}",
        ]
        self.started = True
        with open(self.log, "ab") as log:
            t0 = time.monotonic_ns()
            rc = subprocess.run(
                argv, input="\n".join(self.names).encode(), stdout=log, stderr=log, timeout=timeout
            ).returncode
        if rc != 0:
            raise SystemExit(f"xargs -P failed: {self.log_tail()}")
        assert self.probe is not None
        deadline = time.monotonic() + 60
        out = []
        for name in self.names:
            t = self.probe.wait(name, max(0.0, deadline - time.monotonic()))
            if t is None:
                raise SystemExit(f"{name}: no ready datagram within 60 s of xargs' end")
            out.append((t - t0) / 1e9)
        return out

    def tti(self, timeout: float = 600) -> list[float]:
        """Per sleeper, one after another (each deleted before the next): seconds from
        just before bash runs `crun run -d` to `crun exec NAME /bin/vb-hello` returned,
        with its line written (checked after the loop)."""
        tpl = self._ledger_and_template()
        argv = ["bash", "-c", TTI_LOOP, "bash", str(tpl), str(self.bundles), *self.names]
        self.started = True
        with open(self.log, "ab") as log:
            rc = subprocess.run(argv, stdout=log, stderr=log, timeout=timeout).returncode
        if rc != 0:
            raise SystemExit(f"the shell's tti loop failed: {self.log_tail()}")
        out = []
        for line in (self.bundles / "tti.stamps").read_text().splitlines():
            name, t0, t1 = line.split()
            said = (self.bundles / name / "out").read_text()
            if said != "hello from virtbench\n":
                raise SystemExit(f"{name}: crun exec wrote {said!r}")
            out.append(float(t1) - float(t0))
        return out

    def stop(self) -> float:
        """Remove every sleeper (crun delete --force by name, then cgroups and bundles);
        seconds taken."""
        t0 = time.monotonic()
        with open(self.log, "ab") as log:
            argv = ["bash", "-c", STOP_LOOP, "bash", *self.names]
            subprocess.run(argv, stdout=log, stderr=log, timeout=600)
        for name in self.names:
            for d in self.layout.dirs(name):
                if not cgroups.kill_and_remove(d):
                    print(f"warning: cgroup {d} still busy", flush=True)
        shutil.rmtree(self.bundles, ignore_errors=True)
        self.started = False
        return time.monotonic() - t0

    def log_tail(self, lines: int = 10) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def for_spec(paths: Paths, rootfs: Path, count: int, spec_text: str) -> ShellSleepers:
    """`count` sleepers with the instance options the spec `spec_text` gives crun (what
    virtbench's side of a benchmark runs with)."""
    import tomllib

    from virtbench import spec as specmod
    from virtbench.spec.resolved import resolve

    spec = specmod.parse(tomllib.loads(spec_text), "the benchmark's spec")
    return ShellSleepers(paths, rootfs, count, resolve(spec).runtimes["crun"].instance)
