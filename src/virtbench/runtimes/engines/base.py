"""What container engines (docker, podman) share: the image and the bridge network a run
sets up once, labelled with the run id, and removes again.

An engine driver says how to talk to its engine (`_connect`, `_disconnect`) and how to
do four things with it (`_has_image`, `_import`, `_create_network`, `_remove`); the
base decides when. The image is the artifact rootfs imported as `vb-<run>-rootfs:<digest>`
(no registry), or a user's local image (option `image`) into which the artifact's static
programs are bind-mounted.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from virtbench.errors import InstanceError, RuntimeUnavailable
from virtbench.runtimes.base import Family, InstanceSpec, Runtime
from virtbench.runtimes.tarball import tar_of

LABEL = "org.virtbench.run"


def engine_exit_reason(running: object, code: object, oom: object, error: object) -> str | None:
    """An engine's container state (docker's and podman's inspect agree) in words."""
    if running:
        return None
    why = f"exited with status {code}" if code is not None else "ended"
    if oom:
        why += ", killed by the OOM killer"
    return why + (f" ({error})" if error else "")


class EngineOptions(BaseModel):
    """What every engine driver takes: a user's local image instead of the artifact's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str | None = None


class Engine(Runtime):
    """Base of drivers for container engines with images and networks of their own."""

    family = Family.CONTAINER
    options: EngineOptions
    virtbench_bridge = False
    variant_option = "oci_runtime"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.image = ""
        self.network: str | None = None

    @property
    def run_label(self) -> str:
        return f"{LABEL}={self.ctx.run_id}"

    def conditions(self) -> dict[str, Any]:
        """Its storage (the engine's storage driver: overlay2 and podman's overlay are both
        an overlay per container) and its confinement (the engine's own defaults)."""
        driver = self.storage_driver()
        kind = "overlay" if driver.startswith("overlay") else driver
        return {
            "rootfs": f"{kind} ({self.name}'s {driver} storage driver)",
            "security": f"engine-default ({self.name}'s own seccomp profile)",
        }

    # --- what engine drivers provide --------------------------------------------------
    def storage_driver(self) -> str:
        """The engine's storage driver (asked once)."""
        return "unknown"

    @abstractmethod
    def _connect(self) -> None:
        """Reach the engine (start its daemon, write its config)."""

    def _disconnect(self) -> None:
        """Let go of the engine after everything of the run is removed."""

    @abstractmethod
    def _has_image(self, image: str) -> bool: ...

    @abstractmethod
    def _import(self, tar: bytes, tag: str) -> None:
        """Import a rootfs tar as image `tag`, labelled with the run id."""

    @abstractmethod
    def _image_bytes(self, image: str) -> int:
        """The engine's own figure for an image's size."""

    @abstractmethod
    def _create_network(self, name: str) -> None:
        """Create a bridge network labelled with the run id."""

    @abstractmethod
    def _remove(self, kind: str, name: str) -> None:
        """Remove a network or image of this run; must not raise."""

    # --- the shared part -------------------------------------------------------------
    def _setup(self) -> None:
        self._connect()
        user = self.options.image
        if user:
            if not self._has_image(user):
                raise RuntimeUnavailable(
                    f"{self.name} image {user!r} is not on this host "
                    f"(virtbench uses no registry: {self.name} load or build it first)"
                )
            self.image = user
            return
        rootfs = self.ctx.rootfs
        if rootfs is None:
            raise InstanceError(f"{self.label}: no artifact rootfs to import")
        tag = f"vb-{self.ctx.run_id}-rootfs:{rootfs.name.rsplit('-', 1)[-1][:12]}"
        self.ctx.state.record("image", tag, runtime=self.label)
        if not self._has_image(tag):  # another variant of this run may have imported it
            self._import(tar_of(rootfs), tag)
        self.image = tag

    def image_size(self) -> tuple[int, str] | None:
        if not self.image:
            return None
        return self._image_bytes(self.image), f"{self.name} image size"

    def _close(self) -> None:
        if self.network:
            self._remove("network", self.network)
        if self.image and not self.options.image:
            self._remove("image", self.image)
        self._disconnect()

    def _bridge_network(self) -> str:
        if self.network is None:
            # one network per label: two variants of one engine in a run (docker and
            # docker:runsc), or a named runtime on it, creating one name made the engine's
            # name ambiguous
            suffix = self.label.removeprefix(self.name).lstrip(":").replace(":", "-")
            name = f"vb-{self.ctx.run_id}-net" + (f"-{suffix}" if suffix else "")
            self.ctx.state.record("network", name, runtime=self.label)
            self._create_network(name)
            self.network = name
        return self.network

    def program_binds(self, spec: InstanceSpec) -> list[tuple[Path, str]]:
        """With a user's image: the artifact's static programs, bind-mounted read-only."""
        if not self.options.image:
            return []
        return [(p, f"/bin/{p.name}") for p in sorted((spec.rootfs / "bin").iterdir())]
