"""The site's directory: a file is written only when what it is made of changed (its
digest against the manifest's), atomically (a reader never sees half a page), and a file
the site no longer has (a run that left the store) is removed. The manifest is written
last: a build that was stopped is redone, never trusted. Nothing the manifest does not
list is ever touched."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from virtbench import __version__
from virtbench.errors import VirtbenchError

MANIFEST = ".virtbench-site/manifest.json"


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Files:
    """A build's writes into `root`, against the previous build's manifest."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.old = _manifest(root)
        if not (root / MANIFEST).is_file():  # before the first page: a build killed
            _atomic(root / MANIFEST, json.dumps({"files": {}}) + "\n")  # is redone
        self.new: dict[str, str] = {}
        self.written: list[str] = []
        self.removed: list[str] = []

    def fresh(self, path: str, digest: str) -> bool:
        """`path` is there, made of `digest` by an earlier build: it is kept."""
        if self.old.get(path) == digest and (self.root / path).is_file():
            self.new[path] = digest
            return True
        return False

    def write(self, path: str, text: str, digest: str | None = None) -> None:
        """`path` holds `text`, made of `digest` (default: the text's own)."""
        digest = digest or text_digest(text)
        if self.fresh(path, digest):
            return
        _atomic(self.root / path, text)
        self.new[path] = digest
        self.written.append(path)

    def stopped(self) -> None:
        """A build that did not end (an error, Ctrl-C): record what it wrote beside what
        was there, removing nothing, so that the next build knows every file it finds."""
        self.new = {**self.old, **self.new}
        self._record()

    def finish(self) -> None:
        """Remove what the site no longer has, then record what it has."""
        for path in sorted(set(self.old) - set(self.new)):
            target = self.root / path
            if target.is_file():
                target.unlink()
                self.removed.append(path)
            _prune(target.parent, self.root)
        self._record()

    def _record(self) -> None:
        doc = {"virtbench": __version__, "files": dict(sorted(self.new.items()))}
        text = json.dumps(doc, indent=1) + "\n"
        path = self.root / MANIFEST
        if not path.is_file() or path.read_text() != text:  # a build that changed nothing
            _atomic(path, text)


def _manifest(root: Path) -> dict[str, str]:
    """The previous build's files; {} for a new or empty directory. A directory with
    other files in it is refused: the site never writes over what it did not make."""
    if root.exists() and not root.is_dir():
        raise VirtbenchError(f"{root}: not a directory; give a directory for the site")
    path = root / MANIFEST
    if not path.is_file():
        if root.is_dir() and any(root.iterdir()):
            raise VirtbenchError(
                f"{root}: holds files virtbench site did not write; give a new or empty "
                "directory, or the one an earlier `virtbench site` built"
            )
        return {}
    try:
        files = json.loads(path.read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise VirtbenchError(f"{path}: not a site manifest ({exc}); remove the directory") from None
    if not isinstance(files, dict):
        raise VirtbenchError(f"{path}: not a site manifest; remove the directory")
    return {str(k): str(v) for k, v in files.items() if _inside(str(k))}


def _inside(path: str) -> bool:
    """A manifest path the site could have written: relative, with no way out."""
    parts = Path(path).parts
    return bool(parts) and not Path(path).is_absolute() and ".." not in parts


def _atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _prune(folder: Path, root: Path) -> None:
    """Remove `folder` and the folders above it that the removal left empty (not root)."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty
            return
        folder = folder.parent
