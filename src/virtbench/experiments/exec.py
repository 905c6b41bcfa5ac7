"""`exec`: how long running a command in an already running instance takes, as a code
sandbox or a CI job does between its starts.

Per runtime and repetition, one `sleep` instance is started and made ready (untimed);
then, `count` times each, two commands run in it through the runtime's own way in
(`runc exec`, `docker exec` over the Engine API, `lxc-attach`, `nsenter` for native and
nspawn: runtimes/controls.py), each timed on the host from the exec call issued to its
exit seen with all its output read:

  exec.true        vb-hello: one line out, exit 0 -- the cost of getting in and out
  exec.stdout_1mib vb-hello 1048576: exactly 1 MiB on standard output, read back whole

A command that exits non-zero, or whose output is not exactly what it wrote, is a failed
sample with the reason. A runtime without exec (VM guests: no agent) is said once, with
why, as failed samples. One unit of measurement (`run --resume`) is a runtime's
repetition.
"""

from __future__ import annotations

from operator import methodcaller

from virtbench.errors import InstanceError
from virtbench.experiments.held import each_repetition, recorded, running
from virtbench.experiments.session import Session
from virtbench.spec.sandbox import ExecExperiment
from virtbench.store import Sample

UNIT = ("runtime", "repetition", "workload")

HELLO_BYTES = len("hello from virtbench\n")


def commands(cfg: ExecExperiment) -> list[tuple[str, list[str], int]]:
    """(metric, argv inside the instance, bytes it writes to stdout)."""
    n = cfg.stdout_bytes
    return [("exec.true", ["/bin/vb-hello"], HELLO_BYTES),
            ("exec.stdout_1mib", ["/bin/vb-hello", str(n)], n)]  # fmt: skip


def run(s: Session, cfg: ExecExperiment) -> None:
    units = {m: "ms" for m, _, _ in commands(cfg)}
    each_repetition(s, cfg, "exec", methodcaller("cannot_exec"), units, exec_once)


def exec_once(s: Session, runtime: str, cfg: ExecExperiment, base: dict) -> None:
    """One instance; every command `count` times in it. InstanceError when a command
    never succeeded (the runtime's failures count it)."""
    rt = s.runtimes[runtime]
    with running(s, runtime, cfg.workload, cfg.timeout_s) as inst:
        for metric, argv, expect in commands(cfg):
            params = dict(base["params"], command=" ".join(argv))
            ok, why = 0, ""
            with s.timed("exec", runtime, params):
                results = []
                for _ in range(cfg.count):
                    try:
                        results.append((rt.exec_in(inst, argv, cfg.timeout_s), ""))
                    except InstanceError as exc:
                        results.append((None, str(exc)))
            for res, err in results:
                if res is not None and res.status != 0:
                    err = f"exit status {res.status}: {res.stderr.strip()[-200:]}"
                elif res is not None and res.stdout_bytes != expect:
                    err = f"{res.stdout_bytes} bytes came back of the {expect} written"
                value = res.ms if res is not None and not err else None
                s.record(Sample(metric=metric, value=value, unit="ms", error=err,
                                **{**base, "params": params}))  # fmt: skip
                ok += not err
                why = why or err
            if not ok:
                raise recorded(InstanceError(f"{runtime}: {' '.join(argv)} never succeeded: "
                                             f"{why}"))  # fmt: skip
