"""A sysctl profile applied the same way everywhere (spec `[sysctl]`, e.g. S3's tuning:
net.core.somaxconn = 1024, net.ipv4.ip_local_port_range = "1024 65535",
net.ipv4.tcp_tw_reuse = 1).

- The host: each key is set for the run and put back at its end. What it was is written to
  the run's state directory first (`sysctl.json`), so `virtbench clean` puts it back after
  a crash; a key someone changed since is left as it is, and said. Only one live run may
  hold a profile at a time (two would put back each other's values).
- Instances on the run's bridge get the namespaced keys (the net.* ones a network
  namespace has its own copy of, and the IPC ones) in their namespace: the one virtbench
  made, or through their engine (docker `sysctls`, podman `--sysctl`, which also apply them
  on `none`). Instances on the host's network share the host's; a bare OCI runtime's
  instance on `none` has nothing but loopback, and keeps its defaults.
- Linux guests get every key on their kernel command line (`sysctl.<key>=<value>`).
gVisor's own network stack (runsc netstack = "gvisor") keeps its own settings: the profile
does not reach it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path

from virtbench.errors import VirtbenchError
from virtbench.host import proc

ROOT = Path("/proc/sys")
FILE = "sysctl.json"  # in a run's state directory: {key: [before, set]}
KEY = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")
# keys a network or IPC namespace has its own copy of (the OCI runtime spec's list)
NAMESPACED = ("net.", "kernel.shm", "kernel.msg", "kernel.sem", "fs.mqueue.")


def normal(value: object) -> str:
    """A value as /proc/sys shows it, fields separated by one space ("1024 65535")."""
    return " ".join(str(value).split())


def path_of(key: str, root: Path = ROOT) -> Path:
    return root / key.replace(".", "/")


def read(key: str, root: Path = ROOT) -> str:
    try:
        return normal(path_of(key, root).read_text())
    except OSError as exc:
        where = path_of(key, root)
        raise VirtbenchError(f"sysctl {key}: cannot read {where} ({exc.strerror})") from None


def write(key: str, value: str, root: Path = ROOT) -> str:
    """Set `key`; the value the kernel kept (it may normalise or clamp what it got)."""
    try:
        path_of(key, root).write_text(value + "\n")
    except OSError as exc:
        raise VirtbenchError(f"sysctl {key} = {value!r}: {exc.strerror}") from None
    return read(key, root)


@functools.cache
def _in_new_netns(keys: tuple[str, ...]) -> frozenset[str]:
    """Which of the net.* `keys` a fresh network namespace has a copy of (some, such as
    net.core.rmem_max, exist only in the host's)."""
    paths = [str(path_of(k)) for k in keys]
    script = 'for p in "$@"; do test -e "$p" && echo "$p"; done; exit 0'
    try:
        res = proc.run(["unshare", "--net", "sh", "-c", script, "sh", *paths], timeout=30)
    except VirtbenchError:
        return frozenset()
    there = set(res.stdout.split())
    return frozenset(k for k, p in zip(keys, paths, strict=True) if p in there)


def namespaced(profile: dict[str, str]) -> dict[str, str]:
    """The keys an instance's own network or IPC namespace holds (a net.* key only where
    a fresh network namespace has its own copy: the rest are the host's alone)."""
    ipc = {
        k: v for k, v in profile.items() if k.startswith(NAMESPACED) and not k.startswith("net.")
    }
    net = _in_new_netns(tuple(sorted(k for k in profile if k.startswith("net."))))
    return {**ipc, **{k: v for k, v in profile.items() if k in net}}


def cmdline(profile: dict[str, str]) -> str:
    """The profile as a Linux kernel command line (values with spaces quoted)."""
    return " ".join(
        f'sysctl.{k}="{v}"' if " " in v else f"sysctl.{k}={v}" for k, v in profile.items()
    )


def in_netns(netns: Path, profile: dict[str, str]) -> None:
    """Set the namespaced keys inside the network namespace at `netns`."""
    keys = namespaced(profile)
    if keys:
        args = [f"{k}={v}" for k, v in keys.items()]
        proc.run(["nsenter", f"--net={netns}", "sysctl", "-q", "-w", *args], timeout=30)


class HostProfile:
    """The host's side of a run's profile: `apply` it, `restore` what was there."""

    def __init__(
        self, profile: dict[str, str], state_dir: Path, root: Path = ROOT, file: str = FILE
    ) -> None:
        self.profile = profile
        self.file = state_dir / file
        self.root = root
        self.before: dict[str, str] = {}

    def apply(self) -> dict[str, dict[str, str]]:
        """Set every key; {key: {"before": ..., "set": ...}} for the environment snapshot.
        The old values are on disk before the first is changed."""
        for key in self.profile:
            if not path_of(key, self.root).is_file():
                raise VirtbenchError(f"sysctl.{key}: no such key on this host ({path_of(key)})")
        self.before = {k: read(k, self.root) for k in self.profile}
        saved = {k: [self.before[k], v] for k, v in self.profile.items()}
        self._save(saved)  # on disk before the first change
        kept = {}
        for key, value in self.profile.items():
            try:
                kept[key] = write(key, value, self.root)
            finally:  # what the kernel holds now, so that clean puts back this one too
                saved[key][1] = read(key, self.root)
                self._save(saved)
        return {
            k: {"before": self.before[k], "set": v, "kept": kept[k]}
            for k, v in self.profile.items()
        }

    def _save(self, saved: dict[str, list[str]]) -> None:
        tmp = self.file.with_suffix(".tmp")  # whole or not at all: a crash keeps the old
        tmp.write_text(json.dumps(saved))
        tmp.replace(self.file)

    def restore(self) -> list[str]:
        """Put every key back; one message per key that could not be."""
        if not self.file.is_file():
            return []
        errors = restore_file(self.file, self.root, self.put_back)
        self.file.unlink(missing_ok=True)
        return errors

    @staticmethod
    def put_back(key: str, before: str, root: Path) -> None:
        """Write `before` back to `key` (a setting may need more than one write)."""
        write(key, before, root)


def leftovers(
    state_dir: Path, problems: list[str] | None = None, root: Path = ROOT, name: str = FILE
) -> list[tuple[str, str, str]]:
    """(key, before, set) a dead run's profile left on the host: the keys whose value is
    still the one it set. A key changed since, or a record that cannot be read, goes to
    `problems` (said by clean, never taken for "nothing left")."""
    file = state_dir / name
    if not file.is_file():
        return []
    said = problems if problems is not None else []
    try:
        saved = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        said.append(
            f"run {state_dir.name}: its sysctl record {file} cannot be read ({exc}): "
            "the host's old values are unknown"
        )
        return []
    out = []
    for key, (before, wanted) in saved.items():
        try:
            now = read(key, root)
        except VirtbenchError as exc:
            said.append(f"run {state_dir.name}: {exc}")
            continue
        if now == wanted and now != before:
            out.append((key, before, wanted))
        elif now != before:
            said.append(
                f"run {state_dir.name}: sysctl {key} is {now!r}, neither its {before!r} "
                f"nor the run's {wanted!r}: left as it is"
            )
    return out


def restore_one(
    key: str, before: str, wanted: str, root: Path = ROOT, put_back: PutBack | None = None
) -> str | None:
    """Put `key` back to `before` if it still holds what the run set; why not, or None."""
    now = read(key, root)
    if now != wanted:
        return f"sysctl {key} is {now!r}, not the run's {wanted!r}: left as it is"
    try:
        (put_back or HostProfile.put_back)(key, before, root)
    except VirtbenchError as exc:
        return str(exc)
    return None


PutBack = Callable[[str, str, Path], None]


def restore_file(file: Path, root: Path = ROOT, put_back: PutBack | None = None) -> list[str]:
    saved = json.loads(file.read_text())
    errors = []
    for key, (before, wanted) in saved.items():
        try:
            why = restore_one(key, before, wanted, root, put_back)
        except VirtbenchError as exc:
            why = str(exc)
        if why:
            errors.append(why)
    return errors


def holders(runs_dir: Path, own: str) -> list[str]:
    """Other runs whose state directory holds a profile (live or dead, not yet cleaned)."""
    if not runs_dir.is_dir():
        return []
    return sorted(d.name for d in runs_dir.iterdir() if d.name != own and (d / FILE).is_file())
