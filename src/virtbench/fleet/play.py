"""Running the fleet playbook (fleet.yml) with ansible-runner, and what each host did.

SSH settings make a dead host fail fast instead of hanging the play: no connection
multiplexing (a master connection would outlive a killed sshd and hide it), keep-alives
every 2 s (a silent host is given up after 6 s), a 10 s connect timeout and no retries.
Hosts run at their own pace (strategy free), so a slow host never holds the others.
ansible-runner's private data directory is per fleet run and its settings files are never
written (they would override the next run's).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from virtbench.errors import VirtbenchError
from virtbench.host import proc

SSH_ARGS = (
    "-o ControlMaster=no -o ControlPath=none -o ServerAliveInterval=2 -o ServerAliveCountMax=3"
)


@dataclass
class HostOutcome:
    """What happened on one host: `status` is ok, failed or unreachable; `task` the last
    task that ran (or failed); `message` why it failed."""

    host: str
    status: str = "ok"
    task: str = ""
    message: str = ""


def ansible_env(work: Path) -> dict[str, str]:
    """Environment of ansible-playbook: everything it writes stays under `work`."""
    return {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_TIMEOUT": "10",
        "ANSIBLE_SSH_RETRIES": "0",
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORKS": "50",
        "ANSIBLE_HOME": str(work / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(work / "ansible-home" / "tmp"),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / "ansible-home" / "cp"),
        "ANSIBLE_SSH_ARGS": SSH_ARGS,
        "ANSIBLE_PYTHON_INTERPRETER": "auto_silent",
    }


def inventory_hosts(inventory: Path, work: Path) -> dict[str, dict[str, Any]]:
    """The inventory's hosts and their variables, read by Ansible itself (INI or YAML),
    with the groups each is in (`group_names`, as Ansible calls them)."""
    if not inventory.is_file():
        raise VirtbenchError(f"--inventory {inventory}: no such file")
    exe = Path(sys.executable).parent / "ansible-inventory"
    if not exe.exists():
        raise VirtbenchError("ansible-inventory not found next to virtbench: run `make setup`")
    res = proc.run(
        [str(exe), "-i", str(inventory), "--list"],
        timeout=120,
        check=False,
        env={**os.environ, **ansible_env(work)},
        what="ansible-inventory",
    )
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["?"])[-1]
        raise VirtbenchError(f"--inventory {inventory}: ansible-inventory failed: {last}")
    data = json.loads(res.stdout)
    hostvars = data.get("_meta", {}).get("hostvars", {})
    hosts: list[str] = []
    groups: dict[str, list[str]] = {}  # each host's groups, as Ansible's group_names

    def walk(group: str, within: tuple[str, ...]) -> None:
        for h in data.get(group, {}).get("hosts", []):
            if h not in hosts:
                hosts.append(h)
            groups.setdefault(h, [])
            groups[h] += [g for g in (*within, group) if g not in groups[h] and g != "all"]
        for child in data.get(group, {}).get("children", []):
            walk(child, (*within, group))

    walk("all", ())
    if not hosts:
        raise VirtbenchError(f"--inventory {inventory}: no hosts in it")
    return {h: {**hostvars.get(h, {}), "group_names": sorted(groups[h])} for h in hosts}


def run_playbook(
    work: Path, inventory: Path, hosts: list[str], extravars: dict[str, Any]
) -> dict[str, HostOutcome]:
    """Run fleet.yml on `hosts`; one outcome per host, whatever happened to the others."""
    import ansible_runner

    project = work / "project"
    project.mkdir(parents=True, exist_ok=True)
    playbook = resources.files("virtbench.fleet") / "fleet.yml"
    shutil.copyfile(str(playbook), project / "fleet.yml")
    outcomes = {h: HostOutcome(h) for h in hosts}

    def on_event(ev: dict[str, Any]) -> bool:
        data = ev.get("event_data") or {}
        host = data.get("host")
        if host not in outcomes:
            return True
        o = outcomes[host]
        kind = ev.get("event", "")
        res = data.get("res") or {}
        o.task = data.get("task", o.task)
        if kind == "runner_on_unreachable":
            o.status, o.message = "unreachable", _first_line(res.get("msg", "unreachable"))
        elif (
            kind == "runner_on_failed"
            and not data.get("ignore_errors")
            and o.status != "unreachable"
        ):
            o.status, o.message = "failed", _first_line(_failure(res))
        return True

    r = ansible_runner.run(
        private_data_dir=str(work),
        project_dir=str(project),
        playbook="fleet.yml",
        inventory=str(inventory),
        limit=",".join(hosts),
        extravars=extravars,
        envvars=ansible_env(work),
        quiet=True,
        suppress_env_files=True,
        event_handler=on_event,
        settings={"suppress_ansible_output": True},
    )
    for h, o in outcomes.items():
        if (r.stats or {}).get("processed", {}).get(h) is None and o.status == "ok":
            o.status, o.message = "failed", f"ansible did not reach it ({r.status}, rc {r.rc})"
    return outcomes


def _failure(res: dict[str, Any]) -> str:
    """A failed task in a line: its message and the last lines it printed that say
    something (make's own `*** Error` lines say only that something failed)."""
    msg = str(res.get("msg") or "")
    for key in ("stderr", "stdout"):
        lines = [ln.strip() for ln in str(res.get(key) or "").splitlines()]
        lines = [ln for ln in lines if ln and not ln.startswith("make: ***")]
        if lines:
            tail = " | ".join(lines[-3:])
            return f"{msg}: {tail}" if msg else tail
    return msg or "failed"


def _first_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text[:500]
