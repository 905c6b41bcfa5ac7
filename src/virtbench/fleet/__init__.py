"""Fleet mode: one experiment on many hosts through Ansible, results merged here.

`virtbench fleet run SPEC --inventory hosts.ini` does, for every host of the inventory:

  install   the controller's source tree (git's files) is unpacked in `virtbench_dir`
            (inventory variable, default /opt/virtbench) when it changed, then
            `make setup` -- what `make demo` does before it runs anything
  run       `virtbench run SPEC ...` there, with the same flags, labelled with the host's
            inventory name and the fleet id (`--host-label`, `--fleet`); the whole spec, or
            with `--shard runtime` a share of its runtimes (round robin over the hosts)
  fetch     the host's results store comes back and each of its runs is merged into the
            local store with the host as a label (samples and run); with
            `--store postgresql://...` every host writes to that database instead
  report    a host that failed or could not be reached is reported (and recorded as a run
            of that host with status failed or unreachable and the reason as an event);
            it never costs the other hosts their results

Inventory variables: `virtbench_dir`; `virtbench_env` (a dict of environment variables
for virtbench on that host, e.g. VIRTBENCH_STATE_DIR); `virtbench_offline` (true: the
host has no route to PyPI, so the controller ships the pinned wheels and the set-up
installs from them -- Debian's packages must then already be installed there). The fleet
id names the run everywhere (`virtbench report FLEET`, `virtbench compare FLEET --hosts
a,b`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from virtbench import naming
from virtbench.errors import VirtbenchError
from virtbench.fleet.play import HostOutcome, inventory_hosts, run_playbook
from virtbench.fleet.roles import loadgen_args, roles
from virtbench.host import proc
from virtbench.paths import Paths
from virtbench.store import Store

SOURCE_ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Plan:
    """What to run: the spec as the user named it (a catalog entry or a file), the other
    `virtbench run` flags, the spec's runtimes and how to share them out."""

    spec: str
    spec_name: str
    args: list[str]
    runtimes: list[str]
    shard: str = "none"  # or "runtime"


def shares(hosts: list[str], runtimes: list[str], shard: str) -> dict[str, list[str]]:
    """The runtimes each host runs: all of them, or (shard=runtime) round robin; hosts
    left without a runtime are left out."""
    if shard == "none":
        return {h: list(runtimes) for h in hosts}
    out: dict[str, list[str]] = {}
    for i, rt in enumerate(runtimes):
        out.setdefault(hosts[i % len(hosts)], []).append(rt)
    return out


def source_tarball(dest: Path, root: Path = SOURCE_ROOT) -> tuple[Path, str]:
    """The source tree git knows of (tracked, and new files it does not ignore) as a
    gzip tarball in `dest`, and the digest of its files' names and contents."""
    if not (root / "Makefile").is_file() or not (root / ".git").exists():
        raise VirtbenchError(
            f"fleet: virtbench runs from {root}, not from its source tree (a git checkout), "
            "so it cannot install itself on the hosts"
        )
    res = proc.run_bytes(  # bytes: the names are UTF-8 whatever the locale
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        timeout=60,
        what="fleet: git ls-files",
    )
    if res.returncode != 0:
        raise VirtbenchError(f"fleet: git ls-files in {root} failed: {res.stderr.decode()[:200]}")
    names = sorted({n for n in res.stdout.decode().split("\0") if n and (root / n).is_file()})
    digest = hashlib.sha256()
    for n in names:
        digest.update(n.encode() + b"\0" + (root / n).read_bytes() + b"\0")
    path = dest / "virtbench-source.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for n in names:
            tar.add(root / n, arcname=n, recursive=False)
    return path, digest.hexdigest()[:16]


def download_argv(
    wheels: Path, root: Path = SOURCE_ROOT, python: str | None = None, *extra: str
) -> list[str]:
    """pip's download of the pinned packages (requirements.lock) as wheels into `wheels`,
    for `python` (X.Y; None: this one's) with `extra` requirements beside them."""
    version = ["--python-version", python] if python else []
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--disable-pip-version-check",
        "--only-binary=:all:",
        *version,
        "-r",
        str(root / "requirements.lock"),
        "-d",
        str(wheels),
        *extra,
    ]


def wheelhouse(dest: Path, root: Path = SOURCE_ROOT, cache: Path | None = None) -> tuple[Path, str]:
    """The pinned Python packages (requirements.lock) as wheels in one tarball, for hosts
    with no route to PyPI (inventory variable `virtbench_offline`); its digest. Kept in
    `cache` by the lock file and this Python's version (the two newest): the next fleet
    run sends the same tarball without downloading it again."""
    key = hashlib.sha256((root / "requirements.lock").read_bytes() + sys.version.encode())
    kept = cache / "wheelhouse" / f"{key.hexdigest()[:16]}.tar" if cache else None
    if kept is not None and kept.is_file():
        with tarfile.open(kept) as tar:
            return kept, _names_digest(tar.getnames())
    wheels = dest / "wheels"
    res = proc.run(
        download_argv(wheels, root),
        timeout=1800,
        check=False,
        what="fleet: pip download",
    )
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["?"])[-1]
        raise VirtbenchError(f"fleet: cannot gather the wheels for offline hosts: {last}")
    names = sorted(p.name for p in wheels.iterdir())
    path = dest / "wheels.tar"
    with tarfile.open(path, "w") as tar:
        for n in names:
            tar.add(wheels / n, arcname=n)
    shutil.rmtree(wheels)
    if kept is not None:  # whole or not at all: another run may read it meanwhile
        kept.parent.mkdir(parents=True, exist_ok=True)
        partial = kept.with_name(f"{kept.name}.{os.getpid()}.tmp")
        shutil.copyfile(path, partial)
        partial.replace(kept)
        older = sorted(kept.parent.glob("*.tar"), key=lambda p: p.stat().st_mtime)[:-2]
        for stale in older:  # the two newest stay: another fleet run may still send one
            stale.unlink(missing_ok=True)
    return path, _names_digest(names)


def _names_digest(names: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Results:
    """Where a fleet's runs end up: `store`, here; `url`, the shared database every host
    writes to itself (None: each host's runs are fetched and imported into `store`)."""

    store: Store
    url: str | None


def run(
    plan: Plan,
    inventory: Path,
    results: Results,
    paths: Paths,
    say: Callable[[str], None],
) -> tuple[str, dict[str, HostOutcome], dict[str, list[str]]]:
    """Run `plan` on the inventory's hosts: (fleet id, each host's outcome, each host's
    runs now in `results.store`)."""
    fleet = naming.new_run_id()
    work = paths.state / "fleets" / fleet
    work.mkdir(parents=True)
    try:
        hosts = inventory_hosts(inventory, work)
        cast = roles(hosts)
        if cast.loadgens and any(a.split("=", 1)[0] == "--loadgen" for a in plan.args):
            raise VirtbenchError(
                "fleet run: the inventory names load generators (group loadgen): drop --loadgen"
            )
        share = shares(cast.under_test(list(hosts)), plan.runtimes, plan.shard)
        for h in cast.under_test(list(hosts)):
            if h not in share:
                say(f"[yellow]{h}[/]: no runtime left for it (--shard runtime): not used")
        tarball, digest = source_tarball(work)
        installed = [*share, *cast.loadgens]  # a load generator is set up too
        offline = [h for h in installed if _truthy(hosts[h].get("virtbench_offline"))]
        wheels, wheels_digest = ("", "")
        if offline:
            say(f"gathering the Python packages for {', '.join(offline)} (virtbench_offline)")
            path, wheels_digest = wheelhouse(work, cache=paths.cache)
            wheels = str(path)
        said = f"fleet {fleet} started: {plan.spec_name} on {', '.join(share)}"
        if cast.loadgens:
            said += f"; clients on {', '.join(f'{lg} ({h})' for h, lg in cast.loadgen_of.items())}"
        say(said)
        spec_file = Path(plan.spec)
        extravars = {
            "vb_fleet": fleet,
            "vb_digest": digest,
            "vb_tarball": str(tarball),
            "vb_spec": plan.spec,
            "vb_spec_file": str(spec_file.resolve()) if spec_file.is_file() else "",
            "vb_args": plan.args,
            "vb_runtimes": {h: ",".join(rts) for h, rts in share.items()}
            if plan.shard != "none"
            else {},
            "vb_store": results.url or "",
            "vb_fetch": str(work / "fetched"),
            "vb_wheels": wheels,
            "vb_wheels_digest": wheels_digest,
            "vb_loadgens": cast.loadgens,  # installed and checked; they run nothing
            "vb_host_args": {h: loadgen_args(h, hosts, cast.loadgen_of) for h in share},
        }
        outcomes = run_playbook(work, inventory, installed, extravars)
        merged = _merge(results, fleet, plan, outcomes, work, cast.loadgens)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return fleet, outcomes, merged


def _truthy(value: object) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _merge(
    results: Results,
    fleet: str,
    plan: Plan,
    outcomes: dict[str, HostOutcome],
    work: Path,
    loadgens: list[str],
) -> dict[str, list[str]]:
    """Every host's runs into `results.store`, labelled with the host; a host that left
    none gets a run record saying what happened to it (a load generator runs nothing: only
    its failure is recorded)."""
    store, store_url = results.store, results.url
    merged: dict[str, list[str]] = {}
    shared = [r for r in store.runs() if r.fleet == fleet] if store_url else []
    for host, o in outcomes.items():
        fetched = work / "fetched" / host
        if host in loadgens and o.status == "ok":  # a load generator: it ran nothing
            merged[host] = []
            continue
        if store_url:  # the host wrote to the shared database itself
            ids = [r.id for r in shared if r.host == host]
        elif (fetched / "virtbench.sqlite").is_file():
            src = Store(fetched)
            try:
                ids = [r.id for r in src.runs() if r.fleet == fleet]
                for rid in ids:
                    store.import_run(src, rid, host, fleet)
            finally:
                src.close()
        else:
            ids = []
        if not ids and o.status != "ok":
            ids = [_failed_run(store, fleet, host, plan, o)]
        merged[host] = ids
    return merged


def _failed_run(store: Store, fleet: str, host: str, plan: Plan, o: HostOutcome) -> str:
    rid = naming.new_run_id()
    argv = ["virtbench", "fleet", "run", plan.spec, *plan.args]
    spec = {"name": plan.spec_name, "runtimes": plan.runtimes, "experiment": []}
    store.create_run(rid, plan.spec_name, argv, spec, host=host, fleet=fleet)
    store.add_event(rid, "error", f"fleet {fleet}: {host} {o.status} at {o.task!r}: {o.message}")
    store.finish_run(rid, o.status)
    return rid
