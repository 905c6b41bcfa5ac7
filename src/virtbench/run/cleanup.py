"""Find and remove everything a run left behind, by the `vb-<run-id>-` label alone.

Kinds, in removal order: instances any runtime driver still lists, the engine images and
networks drivers list, processes (environment VIRTBENCH_INSTANCE or membership in a
labelled cgroup), systemd's units named after a run, cgroups, network namespaces, network
links (bridges, veths), mounts, what a run made on a load generator (its directory and
route, from its ledger, asked of that host over ssh), daemons a crashed run started (pid
and start time from its ledger), the run's data directories on disk, and the run's state
directory (bundles, sockets, ledger).

Runs whose lock is held (alive, being resumed, or being cleaned by another clean) are
never touched: `remove` takes each run's lock, without waiting, for the time it
removes that run's objects. A listing that fails (a runtime's list command, `ip link`)
is an error naming what could not be listed, never an empty list.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from virtbench import naming, runtimes
from virtbench.errors import ListingError, VirtbenchError
from virtbench.host import cgroups, delegation, ksm, proc, state, sysctl, systemd
from virtbench.loadgen import remote
from virtbench.paths import Paths
from virtbench.runtimes import daemon
from virtbench.runtimes.traces import mount_points as mounts
from virtbench.runtimes.traces import unmount

NETNS_DIR = Path("/run/netns")


@dataclass(frozen=True)
class Leftover:
    kind: str
    name: str
    run_id: str
    detail: str = ""
    # a host setting's (sysctl's) value before the run, and the one the run set; for
    # what a run left on a load generator, the removal (loadgen/remote.py) and ""
    values: tuple[str, str] | None = None

    def __str__(self) -> str:
        extra = f" ({self.detail})" if self.detail else ""
        return f"{self.kind:9} {self.name}{extra}"


# an orphan: a container directory its engine left and no longer knows (dockerd.orphans)
ENGINE_KINDS = ("instance", "orphan", "image", "network", "volume", "profile", "pool", "apparmor")


def _engine_objects(
    problems: list[str] | None, engines: Collection[str] | None
) -> list[tuple[str, str, str]]:
    """(runtime, kind, name) for everything the engines of these registered runtimes
    (None: of every one) hold; a runtime that cannot list goes in `problems` (or raises,
    without a list for them), and the sweep of the others goes on."""
    found = []
    for name in runtimes.names():
        if engines is not None and name not in engines:
            continue
        try:
            found += [(name, k, n) for k, n in runtimes.get(name).list_objects()]
        except Exception as exc:
            _unlisted(problems, f"{name}'s objects", exc)
    return found


def _unlisted(problems: list[str] | None, what: str, exc: Exception) -> None:
    message = f"could not list {what}: {exc}"
    if problems is None:
        raise ListingError(message) from exc
    problems.append(message)


def _daemons(run_dir: Path) -> list[tuple[str, int, int | None]]:
    """(name, pid, start time) of the daemons a run's ledger says it started."""
    out = []
    for rec in state.recorded(run_dir, "daemon-pid"):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            out.append((rec["name"], int(rec["pid"]), rec.get("start")))
    return out


def _proc_label(pid: int, labelled_cgroups: set[str]) -> str | None:
    """The instance name a process belongs to, from its environment or its cgroup."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        env = b""
    for item in env.split(b"\0"):
        if item.startswith(b"VIRTBENCH_INSTANCE="):
            return item.split(b"=", 1)[1].decode(errors="replace")
    if labelled_cgroups:
        try:
            text = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            return None
        for line in text.splitlines():  # engines nest cgroups below ours: any component
            path = line.split(":", 2)[-1]
            for part in path.split("/"):
                if part in labelled_cgroups:
                    return part
    return None


def _labelled(pid: int, label: str) -> bool:
    """Whether process `pid` (still) belongs to the instance `label`."""
    return _proc_label(pid, {label}) == label


def _cgroup_dirs(layout: cgroups.Layout) -> list[Path]:
    return [d for d in layout.children() if naming.run_id_of(d.name)]


def _links() -> list[str]:
    res = proc.run(["ip", "-j", "link", "show"], check=False, timeout=30)
    if res.returncode != 0:
        raise ListingError(f"ip link show: {res.brief()}")
    return [link["ifname"] for link in json.loads(res.stdout or "[]")]


@dataclass(frozen=True)
class _Scope:
    """Which runs a scan reports: only `run_id` (None: any), and none of the `live` ones."""

    run_id: str | None
    live: set[str]

    def ours(self, name: str) -> str | None:
        """The run id a labelled name carries, where that run is one the scan reports."""
        rid = naming.run_id_of(name)
        if rid is None or rid in self.live or (self.run_id is not None and rid != self.run_id):
            return None
        return rid

    def wants(self, rid: str) -> bool:
        """Whether `rid` (a directory's name) is the id of a run the scan reports."""
        return naming.is_run_id(rid) and rid not in self.live and self.run_id in (None, rid)


def _by_label(
    scope: _Scope,
    layout: cgroups.Layout,
    problems: list[str] | None,
    engines: Collection[str] | None,
) -> list[Leftover]:
    """What carries a run's label in its name: engine objects (of `engines`' runtimes, or
    of all), processes, cgroups, network namespaces and links."""
    found = [
        Leftover(kind, obj, rid, runtime)
        for runtime, kind, obj in _engine_objects(problems, engines)
        if (rid := scope.ours(obj))
    ]
    found += _units(scope, problems)
    cg_dirs = [d for d in _cgroup_dirs(layout) if scope.ours(d.name)]
    found += _processes(scope, {d.name for d in cg_dirs})
    found += [Leftover("cgroup", str(d), scope.ours(d.name) or "") for d in cg_dirs]
    if NETNS_DIR.is_dir():
        for ns in sorted(NETNS_DIR.iterdir()):
            if rid := scope.ours(ns.name):
                found.append(Leftover("netns", ns.name, rid))
    try:
        links = _links()
    except (ListingError, ValueError) as exc:
        _unlisted(problems, "network links", exc)
        links = []
    for link in links:
        if rid := scope.ours(link.split("@", 1)[0]):
            found.append(Leftover("link", link.split("@", 1)[0], rid))
    return found


def _units(scope: _Scope, problems: list[str] | None) -> list[Leftover]:
    """Where systemd is the init: its slices named after a run (the instance slices an
    engine placed its containers in, and the run's slice that holds them)."""
    if not systemd.booted():
        return []
    try:
        units = systemd.run_units()
    except ListingError as exc:
        _unlisted(problems, "systemd's slices", exc)
        return []
    return [Leftover("unit", u, rid) for u in units if scope.wants(rid := systemd.run_of(u) or "")]


def _processes(scope: _Scope, cgroup_names: set[str]) -> list[Leftover]:
    """The processes (but this one) labelled by their environment or their cgroup."""
    found: list[Leftover] = []
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        if pid == os.getpid():
            continue
        label = _proc_label(pid, cgroup_names)
        if label and (rid := scope.ours(label)):
            found.append(Leftover("process", str(pid), rid, label))
    return found


def _in_run_dirs(scope: _Scope, paths: Paths, problems: list[str] | None) -> list[Leftover]:
    """What a run's directories hold or stand for: mounts inside its state directory, its
    data directory, and what its state directory says it left (`_run_dir`)."""
    found: list[Leftover] = []
    state_prefix = str(paths.runs) + "/"
    for mnt in mounts():  # only mounts inside a run's state directory are ours
        if not mnt.startswith(state_prefix):
            continue
        rid = mnt[len(state_prefix) :].split("/", 1)[0]
        if scope.wants(rid):
            found.append(Leftover("mount", mnt, rid))
    if paths.data.is_dir():
        for d in sorted(paths.data.iterdir()):
            if scope.wants(d.name):
                found.append(Leftover("data", str(d), d.name))
    if paths.runs.is_dir():
        for d in sorted(paths.runs.iterdir()):
            if scope.wants(d.name):
                found += _run_dir(d, problems)
    return found


def _run_dir(d: Path, problems: list[str] | None) -> list[Leftover]:
    """A run's state directory: the daemons its ledger names that still run, the host
    settings its profile left changed, then the directory itself."""
    found: list[Leftover] = []
    for name, pid, start in _daemons(d):
        if start is not None and daemon.start_time(pid) == start:
            found.append(Leftover("daemon", str(pid), d.name, f"{name} {start}"))
    try:  # what it made on a load generator, asked of that host
        for host, what, removal in remote.leftovers(d):
            found.append(Leftover("remote", host, d.name, what, (removal, "")))
    except ListingError as exc:
        _unlisted(problems, "what a run left on its load generator", exc)
    for key, before, wanted in sysctl.leftovers(d, problems):  # its profile
        back = f"back to {before!r}; the run set {wanted!r}"
        found.append(Leftover("sysctl", key, d.name, back, (before, wanted)))
    for key, before, wanted in sysctl.leftovers(d, problems, ksm.ROOT, ksm.FILE):  # KSM on
        back = f"back to {before!r}; the run set {wanted!r}"
        found.append(Leftover("ksm", key, d.name, back, (before, wanted)))
    found.append(Leftover("state", str(d), d.name))
    return found


def scan(
    paths: Paths,
    run_id: str | None = None,
    layout: cgroups.Layout | None = None,
    include_live: bool = False,
    problems: list[str] | None = None,
    engines: Collection[str] | None = None,
) -> list[Leftover]:
    """Everything labelled with a run id (or only `run_id`), skipping live runs unless
    `include_live` (a run checking its own leftovers while it still holds its lock).
    Engines' objects are asked of the runtimes named in `engines` (a run's own: no
    other engine holds what it made), or of every installed one (None: `clean`). What
    could not be listed is raised as ListingError, or, given a `problems` list, said
    there while the rest is still scanned."""
    layout = layout or cgroups.Layout.detect()
    scope = _Scope(run_id, set() if include_live else state.live_runs())
    found = _by_label(scope, layout, problems, engines)
    return found + _in_run_dirs(scope, paths, problems)


def remove(
    items: list[Leftover],
    layout: cgroups.Layout | None = None,
    locked: bool = False,
    left_alone: list[Leftover] | None = None,
) -> list[str]:
    """Remove leftovers run by run, each run's while holding its lock (`locked`: the
    caller holds it already: a run removing its own); one message per thing that
    resisted, and per run left alone because its lock is held elsewhere (its items go
    to `left_alone`, if given: whoever holds the lock may remove them, not this call)."""
    layout = layout or cgroups.Layout.detect()
    by_run: dict[str, list[Leftover]] = {}
    for it in items:
        by_run.setdefault(it.run_id, []).append(it)
    errors: list[str] = []
    for rid, its in by_run.items():
        if locked or not rid:
            errors += _remove(its, layout)
            continue
        with state.holding(rid) as ok:
            if ok:
                errors += _remove(its, layout)
            else:
                errors.append(
                    f"run {rid} is alive (running, resumed or being cleaned): "
                    f"its {len(its)} objects were left alone"
                )
                if left_alone is not None:
                    left_alone += its
    return errors


def _remove(items: list[Leftover], layout: cgroups.Layout) -> list[str]:
    """Remove leftovers in a safe order; one message per thing that resisted."""
    errors: list[str] = []
    by_kind: dict[str, list[Leftover]] = {}
    for it in items:
        by_kind.setdefault(it.kind, []).append(it)
    for kind in ENGINE_KINDS:
        for it in by_kind.get(kind, []):
            try:
                runtimes.get(it.detail).remove_object(kind, it.name)
            except Exception as exc:  # keep going: the rest must still be removed
                errors.append(f"{kind} {it.name}: {exc}")
    for it in by_kind.get("process", []):  # only while it still carries the run's label
        proc.signal_pid(int(it.name), signal.SIGKILL, functools.partial(_labelled, label=it.detail))
    for it in sorted(by_kind.get("unit", []), key=lambda u: len(u.name)):  # a run's first
        try:
            systemd.stop(it.name)
        except VirtbenchError as exc:
            errors.append(str(exc))
    for it in by_kind.get("cgroup", []):
        if not cgroups.kill_and_remove(Path(it.name)):
            errors.append(f"cgroup {it.name} still busy")
    for it in by_kind.get("netns", []):
        res = proc.run(["ip", "netns", "delete", it.name], check=False)
        if res.returncode != 0:
            errors.append(f"netns {it.name}: {res.brief()}")
    for it in by_kind.get("link", []):
        res = proc.run(["ip", "link", "delete", it.name], check=False)
        if res.returncode != 0 and "Cannot find device" not in res.stderr:
            errors.append(f"link {it.name}: {res.brief()}")
    errors += unmount([it.name for it in by_kind.get("mount", [])])
    for it in by_kind.get("remote", []):  # over a connection of its own: the run's is gone
        assert it.values is not None
        if why := remote.remove_leftover(it.name, it.values[0]):
            errors.append(why)
    for it in by_kind.get("daemon", []):
        daemon.stop_recorded(int(it.name), int(it.detail.rsplit(" ", 1)[1]))
    for kind, root, back in (("sysctl", sysctl.ROOT, None), ("ksm", ksm.ROOT, ksm.put_back)):
        for it in by_kind.get(kind, []):  # back to what the run found, unless changed since
            assert it.values is not None
            before, wanted = it.values
            try:
                why = sysctl.restore_one(it.name, before, wanted, root, back)
            except VirtbenchError as exc:
                why = str(exc)
            if why:
                errors.append(why)
    for kind in ("data", "state"):
        for it in by_kind.get(kind, []):
            shutil.rmtree(it.name, ignore_errors=True)
            if Path(it.name).exists():
                errors.append(f"{kind} {it.name} could not be removed")
    return errors


def remove_empty_parents(layout: cgroups.Layout | None = None) -> list[Path]:
    """The `virtbench` parent cgroups, in every hierarchy, once no run is alive or
    starting (state.host_idle) and they are empty; the ones removed. One that still has
    a child keeps it: a dead run's cgroup is a leftover `scan` lists."""
    layout = layout or cgroups.Layout.detect()
    removed = []
    with state.host_idle() as idle:
        if not idle:
            return []
        if layout.delegated:  # systemd's unit: stopped, and systemd removes its cgroup
            if delegation.release(layout):
                assert layout.unified is not None  # a delegated parent is in the unified tree
                removed.append(layout.unified / layout.parent)
            return removed
        for root in layout.roots():
            parent = root / layout.parent
            if cgroups.rmdir_once_released(parent):
                removed.append(parent)
    return removed


def summarize(items: list[Leftover]) -> str:
    """`3 runs: 12 cgroup, 4 process` style one-liner."""
    kinds: dict[str, int] = {}
    for it in items:
        kinds[it.kind] = kinds.get(it.kind, 0) + 1
    runs = sorted({it.run_id for it in items})
    detail = ", ".join(f"{n} {k}" for k, n in kinds.items())
    return f"{len(items)} leftovers of run(s) {', '.join(runs)}: {detail}"
