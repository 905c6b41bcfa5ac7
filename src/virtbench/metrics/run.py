"""The run's own figures, whatever experiments it holds: the host's availability (the
scalability points and the host sampler), the artifact's size on disk, and a server's
resource use over each measurement (measure/procstat.py). Each experiment type declares
its own figures in its module (experiments/kind.py)."""

from __future__ import annotations

from virtbench.figure import Metric


def _host(name: str, includes: str, resolution: float | None, label: str) -> Metric:
    return Metric(
        name,
        "%",
        "higher",
        includes,
        resolution=resolution,
        repeated=False,
        summary="series",
        compared=False,
        ab_compared=False,
        plot="scalability",
        headline=False,
        side=True,
        label=label,
    )


# fmt: off
RUN: tuple[Metric, ...] = (
    # --- the host's availability at each scalability point ------------------------------------
    _host("host.cpu_idle_pct", "idle share of all the host's CPUs over the `settle_s` window "
          "before the point's measurements (psutil, /proc/stat; rounded to 0.1)", 0.1,
          "CPU idle"),
    _host("host.mem_available_pct", "MemAvailable / MemTotal after that window", None,
          "memory available"),
    _host("host.swap_free_pct", "free swap / swap total (100 without swap; psutil, rounded "
          "to 0.1)", 0.1, "swap free"),
    # the run's time series only (the host sampler): CPU taken by the hypervisor's other guests
    Metric("host.steal_pct", "%", "lower", "share of the host's CPU time stolen by the "
           "hypervisor over the sampler's period (psutil, /proc/stat; rounded to 0.1)",
           resolution=0.1, repeated=False, summary="series", compared=False,
           ab_compared=False, headline=False, side=True, label="CPU steal"),
    Metric("host.*", "", None, "a host figure not declared here", lower_bound=None,
           repeated=False, summary="series", compared=False, ab_compared=False,
           headline=False, side=True, label="host {}"),
    Metric("image_size", "MiB", "lower", "the artifact as the runtime keeps it on disk to "
           "start it (rootfs du, the engine's image, a VM's kernel and initramfs), once per "
           "runtime and run", repeated=False, compared=False, headline=False, side=True,
           label="image size on disk"),
    # --- a server's resource use over each measurement (measure/procstat.py) ---------------
    Metric("resources.*.cpu_*_s", "s", "lower", "CPU time (user, system or guest ticks) of "
           "the instance's host processes, or of its runtime's daemons, over the measurement",
           resolution=0.01, repeated=False, headline=False, side=True, plot="resources",
           label="{} {} CPU time"),
    Metric("resources.*.cpu_pct", "%", "lower", "(user + system ticks) / the measurement's "
           "duration, of one CPU (100 = one CPU busy)", resolution=1.0, lower_bound=0.0,
           repeated=False, headline=False, side=True, plot="resources", label="{} CPU use"),
    Metric("resources.*.rss_max_mib", "MiB", "lower", "the largest sum of the processes' "
           "resident sets at a read (shared pages once per process)", resolution=4 / 1024,
           repeated=False, headline=False, side=True, plot="resources", label="{} peak RSS"),
    Metric("resources.*.*_stall_pct", "%", "lower", "share of the measurement's time in which "
           "some of the instance's tasks waited for the resource (cpu, memory or io): the "
           "growth of the `some` total of its cgroup's pressure file (PSI; cgroup v2 only)",
           resolution=1e-4, repeated=False, headline=False, side=True,
           label="{} waiting for {}"),
)
# fmt: on
