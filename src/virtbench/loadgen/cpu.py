"""How busy a client's CPUs were during a trial: did the figure measure the server, or
the client?

A client that has no CPU left measures itself: its requests per second are what its own
host could send. The CPU counters of the CPUs the client may run on (/proc/stat) are read
before and after each client command. Here, around the command, of its pinned CPUs
(`around`). On a load generator, in the same shell as the client and so in the same
command through the connection (`WRAPPER`): the CPUs its session may run on
(Cpus_allowed_list), onto stderr as lines that start with `MARK`, which are taken out of
the output before the client's own is parsed (`split`). Busy is user, nice, system, irq,
softirq and steal; a trial whose client's CPUs were busy over `SATURATED_PCT` percent of
the time is flagged (`client_saturated`) and said to have measured the client.
"""

from __future__ import annotations

from dataclasses import dataclass

from virtbench.measure.topology import parse_cpulist

MARK = "VB-LOADGEN "
SATURATED_PCT = 90.0

# reads the counters onto stderr; "$@" is the client command, its status the script's
WRAPPER = (
    "s() { sed -n 's/^Cpus_allowed_list:[[:space:]]*/" + MARK + "allowed /p' /proc/self/status; "
    "sed -n 's/^cpu\\([0-9]\\)/" + MARK + "cpu\\1/p' /proc/stat; } >&2; "
    's; "$@"; r=$?; s; exit $r'
)


@dataclass(frozen=True)
class Busy:
    """The client's CPUs during one trial: busy percent of their time, and which."""

    pct: float
    cpus: str

    @property
    def saturated(self) -> bool:
        return self.pct > SATURATED_PCT

    def params(self) -> dict[str, object]:
        """What the trial's samples record (the CPUs' list is the worker's `client_cpus`
        here, `loadgen_cpus` on a load generator: loadgen/remote.py)."""
        return {"client_cpu_pct": round(self.pct, 1), "client_saturated": self.saturated}


def _counters(lines: list[str], allowed: set[int]) -> tuple[int, int]:
    """(busy, total) jiffies of the `allowed` CPUs among /proc/stat's cpuN lines."""
    busy = total = 0
    for line in lines:
        name, *fields = line.split()
        if int(name[3:]) not in allowed:
            continue
        user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in fields[:8])
        busy += user + nice + system + irq + softirq + steal
        total += user + nice + system + idle + iowait + irq + softirq + steal
    return busy, total


def split(stderr: str) -> tuple[str, Busy | None]:
    """The client's own stderr, and its CPUs' use during the trial (None: the counters
    are not both there, e.g. the shell was killed)."""
    own, marked = [], []
    for line in stderr.splitlines(keepends=True):
        if line.startswith(MARK):
            marked.append(line[len(MARK) :])
        else:
            own.append(line)
    reads: list[tuple[str, list[str]]] = []
    for line in marked:
        if line.startswith("allowed "):
            reads.append((line.split()[1], []))
        elif reads:
            reads[-1][1].append(line)
    if len(reads) != 2:
        return "".join(own), None
    allowed = set(parse_cpulist(reads[0][0]))
    before, after = (_counters(r[1], allowed) for r in reads)
    return "".join(own), between(before, after, reads[0][0])


def counters(cpus: str) -> tuple[int, int]:
    """(busy, total) jiffies of this host's CPUs `cpus` (a list like "0-1,4") now."""
    with open("/proc/stat") as f:
        lines = [ln for ln in f if ln.startswith("cpu") and ln[3:4].isdigit()]
    return _counters(lines, set(parse_cpulist(cpus)))


def between(before: tuple[int, int], after: tuple[int, int], cpus: str) -> Busy:
    """The busy share of `cpus` between two `counters` readings."""
    (b0, t0), (b1, t1) = before, after
    return Busy(100.0 * (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0, cpus)
