"""What a user would type by hand to do what a driver does, for checking virtbench's own
timing against hyperfine (boot_vs_hyperfine.py, trend_vs_hyperfine.py).

Per driver, the foreground command of a prepared instance, built from the driver's own
launch command where its `_start` has one (`run_argv` of runc, crun and runsc,
`start_argv` of lxc, `launch_argv` of native, nspawn and the VMMs, the `lxc launch` LXD's
`_prepare` wrote), else as a user would write it (`docker run --rm ...`, `podman run
--rm ...`); and, where needed, what to run (untimed) before each try.
"""

from __future__ import annotations

import contextlib
import shlex

from virtbench.runtimes.base import Instance, InstanceSpec, Runtime
from virtbench.runtimes.engines.cri import Cri
from virtbench.runtimes.engines.docker import Docker
from virtbench.runtimes.engines.dockerd import BASE_URL
from virtbench.runtimes.engines.podman import Podman
from virtbench.runtimes.lxc.lxc import Lxc
from virtbench.runtimes.lxc.lxd import Lxd
from virtbench.runtimes.oci.base import OciRuntime
from virtbench.runtimes.process.native import Native
from virtbench.runtimes.vm.base import Vm


def detached(rt: Runtime) -> bool:
    """Whether the hyperfine check times the detached launch of `sleep` against
    `spawn_to_started` rather than the by-hand foreground run of `hello`: where that
    command returns long after the exit (LXD's `lxc launch` of an init that exits
    returns ~5 s late)."""
    return isinstance(rt, Lxd | Cri)  # a pod: a CRI client's calls return at "started"


def command_line(rt: Runtime, spec: InstanceSpec) -> tuple[Instance, list[str], dict[str, str]]:
    """(instance, argv, extra environment) a user would type to do by hand what
    `rt.run_to_exit(spec)` does. The instance is prepared but not started; `stop` it
    afterwards."""
    inst = rt.prepare(spec)
    try:
        argv, env = argv_of(rt, inst)
    except BaseException:
        with contextlib.suppress(Exception):
            rt.stop(inst)
        raise
    return inst, argv, env


def argv_of(rt: Runtime, inst: Instance) -> tuple[list[str], dict[str, str]]:
    """The by-hand command of a prepared instance, and its extra environment."""
    if isinstance(rt, OciRuntime):
        return rt.run_argv(inst, detach=False), {}
    if isinstance(rt, Native | Vm):  # and nspawn, bwrap, wasmtime; a VM's VMM
        return rt.launch_argv(inst), {}
    if isinstance(rt, Lxc):
        return rt.start_argv(inst, detach=False), {}
    if isinstance(rt, Lxd):
        return inst.own.launch, {k: v for k, v in rt.env.items() if k.startswith("LXD_")}
    if isinstance(rt, Docker):
        return docker_argv(rt, inst), {"DOCKER_HOST": BASE_URL}
    if isinstance(rt, Podman):
        args = list(inst.own.run_args)
        del args[args.index("--name") : args.index("--name") + 2]  # repeated runs
        argv = rt.podman_argv("run", "--rm", *args, rt.image, *inst.argv)
        return argv, {"CONTAINERS_CONF": rt.env["CONTAINERS_CONF"]}
    if isinstance(rt, Cri):
        return cri_argv(rt, inst), {}
    raise NotImplementedError(f"{rt.label}: no command-line equivalent")


def cri_argv(rt: Cri, inst: Instance) -> list[str]:
    """A pod's launch as a shell loop of crictl would do it: its sandbox, its container's
    create and start, with the driver's own pod and container configurations."""
    crictl = shlex.join(rt.crictl.argv())
    pod, ctr = shlex.quote(str(inst.own.pod_config)), shlex.quote(str(inst.own.container_config))
    handler = shlex.quote(rt.options.handler)
    script = (
        f"p=$({crictl} runp --runtime {handler} {pod}) && "
        f"c=$({crictl} create $p {ctr} {pod}) && {crictl} start $c >/dev/null"
    )
    return ["sh", "-c", script]


def docker_argv(rt: Docker, inst: Instance) -> list[str]:
    """`docker run --rm` with the settings the driver gives the Engine API."""
    spec = inst.spec
    argv = ["docker", "run", "--rm", "--runtime", rt.options.oci_runtime]
    argv += ["--network", rt.effective_network(spec.network)]
    argv += ["--cgroup-parent", f"/virtbench/{spec.name}", "--pull", "never"]
    argv += ["--label", rt.run_label]
    return [*argv, rt.image, *inst.argv]


def prepare_command(rt: Runtime, inst: Instance) -> list[str] | None:
    """What to run (untimed) before each by-hand `command_line` run, e.g. removing the
    previous instance of that name (LXD); None: nothing."""
    if isinstance(rt, Lxd):
        return ["lxc", "delete", "--force", inst.name]
    if isinstance(rt, Cri):  # the previous try's pod (only the run's own containerd has it)
        return [*rt.crictl.argv("rmp", "--force", "--all")]
    return None
