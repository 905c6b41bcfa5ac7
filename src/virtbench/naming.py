"""Run ids and the `vb-<run-id>-...` names of everything virtbench creates.

Interface names are limited to 15 characters, so run ids are 6 characters of
[a-z0-9] and per-instance suffixes are short base-36 counters.
"""

from __future__ import annotations

import re
import secrets
import string

from virtbench.errors import VirtbenchError

PREFIX = "vb-"
RUN_ID_LEN = 6
_ALPHABET = string.ascii_lowercase + string.digits
RUN_ID_RE = re.compile(rf"^[a-z0-9]{{{RUN_ID_LEN}}}$")
# Any name virtbench created: vb-<run-id>-<suffix>; group 1 is the run id. The suffix may
# carry an image tag (`vb-<run-id>-rootfs:<digest>`).
NAME_RE = re.compile(rf"^{PREFIX}([a-z0-9]{{{RUN_ID_LEN}}})-[a-z0-9.-]+(?::[a-z0-9._-]+)?$")
IFNAMSIZ = 15


def new_run_id() -> str:
    """A fresh random run id (6 characters, starts with a letter)."""
    first = secrets.choice(string.ascii_lowercase)
    return first + "".join(secrets.choice(_ALPHABET) for _ in range(RUN_ID_LEN - 1))


def is_run_id(text: str) -> bool:
    return bool(RUN_ID_RE.match(text))


def base36(n: int) -> str:
    """`n` in base 36 with digits 0-9a-z (short instance suffixes)."""
    if n < 0:
        raise ValueError("negative")
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def name(run_id: str, suffix: str) -> str:
    """`vb-<run-id>-<suffix>`, the label every created object carries."""
    return f"{PREFIX}{run_id}-{suffix}"


INSTANCE_DIGITS = 4  # 36**4: 1.7 million instances in one run before a name grows


def instance(run_id: str, n: int) -> str:
    """The `n`th instance's name, `vb-<run-id>-<n in base 36, 4 digits>`. Fixed width, so
    no instance name is a prefix of another: runsc resolves a container id by prefix, and
    deleting `vb-x-1` while `vb-x-10` exists fails as ambiguous (a density run of 40
    runsc sleepers left its first one behind)."""
    return name(run_id, base36(n).rjust(INSTANCE_DIGITS, "0"))


def ifname(run_id: str, suffix: str) -> str:
    """An interface name; raises if it would not fit IFNAMSIZ."""
    text = name(run_id, suffix)
    if len(text) > IFNAMSIZ:
        raise ValueError(f"interface name {text!r} longer than {IFNAMSIZ} characters")
    return text


def run_id_of(text: str) -> str | None:
    """The run id a `vb-<run-id>-...` name belongs to, or None if it is not ours."""
    m = NAME_RE.match(text)
    return m.group(1) if m else None


HOST_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_host_label(label: str, flag: str) -> None:
    """A host's name as a label ("" for this machine): it ends up in file names and
    commands on the controller, so letters, digits, `.`, `_` and `-` only."""
    if label and not HOST_LABEL.fullmatch(label):
        raise VirtbenchError(
            f"{flag}: {label!r} is not a host name (letters, digits, '.', '_', '-'; at most 64)"
        )
