"""Roles in a fleet: hosts under test, and the load generators their clients run on.

An inventory's hosts are hosts under test unless they are in the group `loadgen` (or
say `virtbench_role=loadgen`). A load generator is installed and checked like any host
(make setup: the clients come with it) but runs nothing itself: each host under test runs
the spec with `--loadgen` naming its load generator, as ssh on that host reaches it
(`ansible_user@ansible_host`, `ansible_port`), plus the host's
`virtbench_loadgen_ssh_options` (ssh `-o` options, e.g. the IdentityFile on the host under
test that the load generator accepts). Which load generator: the host's
`virtbench_loadgen` (an inventory name), else the only one there is. Each host under test
needs one of its own: two measuring through one at once would measure each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from virtbench.errors import VirtbenchError

GROUP = "loadgen"


@dataclass(frozen=True)
class Roles:
    """The load generators, and each host under test's (empty: none in the inventory)."""

    loadgens: list[str]
    loadgen_of: dict[str, str]

    def under_test(self, hosts: list[str]) -> list[str]:
        return [h for h in hosts if h not in self.loadgens]


def _is_loadgen(variables: dict[str, Any]) -> bool:
    return GROUP in variables.get("group_names", []) or variables.get("virtbench_role") == GROUP


def roles(hosts: dict[str, dict[str, Any]]) -> Roles:
    """Each host's role from the inventory (its variables and groups)."""
    loadgens = [h for h, v in hosts.items() if _is_loadgen(v)]
    if not loadgens:
        return Roles([], {})
    of: dict[str, str] = {}
    for h, v in hosts.items():
        if h in loadgens:
            continue
        named = v.get("virtbench_loadgen")
        if named is None and len(loadgens) > 1:
            raise VirtbenchError(
                f"fleet: {h} has no virtbench_loadgen and the inventory has "
                f"{len(loadgens)} load generators ({', '.join(loadgens)}): name its own"
            )
        lg = str(named) if named is not None else loadgens[0]
        if lg not in loadgens:
            raise VirtbenchError(f"fleet: {h}'s virtbench_loadgen {lg} is not a load generator")
        of[h] = lg
    shared = [lg for lg in loadgens if list(of.values()).count(lg) > 1]
    if shared:
        users = [h for h, lg in of.items() if lg == shared[0]]
        raise VirtbenchError(
            f"fleet: {', '.join(users)} would share the load generator {shared[0]}: give each "
            "host under test its own (virtbench_loadgen), or run them one fleet at a time"
        )
    return Roles(loadgens, of)


def loadgen_args(host: str, hosts: dict[str, dict[str, Any]], of: dict[str, str]) -> list[str]:
    """The `virtbench run` flags a host under test runs with: its load generator as ssh
    on it reaches it, and its ssh options (none for a host without one)."""
    if host not in of:
        return []
    lg = hosts[of[host]]
    address = str(lg.get("ansible_host", of[host]))
    user = lg.get("ansible_user")
    args = ["--loadgen", f"{user}@{address}" if user else address]
    if "ansible_port" in lg:
        args.append(f"--ssh-option=Port={lg['ansible_port']}")
    return args + [f"--ssh-option={o}" for o in _options(hosts[host])]


def _options(variables: dict[str, Any]) -> list[str]:
    """`virtbench_loadgen_ssh_options`: a list (YAML; in an INI file `[a,b]`, which Ansible
    hands over as that text, quotes taken out), or one option, or several separated by
    commas."""
    given = variables.get("virtbench_loadgen_ssh_options", [])
    if isinstance(given, str):
        given = given.strip().removeprefix("[").removesuffix("]").split(",")
    return [str(o).strip().strip("'\"") for o in given if str(o).strip()]
