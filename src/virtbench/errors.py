"""Errors that reach the user as one line naming what to fix."""


class VirtbenchError(Exception):
    """An error the CLI prints as a single line (no traceback) and exits non-zero on."""

    exit_code = 2


class SpecError(VirtbenchError):
    """A spec file or CLI option is invalid; the message names the file and field."""


class RuntimeUnavailable(VirtbenchError):
    """A runtime cannot run here; the message says why and how to fix it."""


class InstanceError(VirtbenchError):
    """An instance failed to start, signal readiness, or stop."""


class StoreError(VirtbenchError):
    """The results store cannot be written (full disk, read-only, removed): the run stops,
    what was committed before stays."""

    exit_code = 1


class EngineGone(InstanceError):
    """A runtime's engine daemon (dockerd, LXD) died or stopped answering mid-run: the
    runtime is skipped for the rest of the run, the others go on."""


class ListingError(VirtbenchError):
    """What is on the host could not be listed (a runtime's list command kept failing, a
    daemon stopped answering): never read as "nothing there"."""
