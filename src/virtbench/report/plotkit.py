"""What every plot module shares: the `Plot` (saved as PNG and SVG, or inlined as SVG),
the style, the colours per runtime, and the small helpers that pick and summarise samples.
"""

from __future__ import annotations

import io
import math
import multiprocessing
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from virtbench import metrics
from virtbench.errors import VirtbenchError
from virtbench.store.records import Sample

T = TypeVar("T")

STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",  # text stays text: smaller, searchable
    "svg.hashsalt": "virtbench",  # the same data gives the same file
    # a study's run draws dozens; each is closed once written (html.run_section)
    "figure.max_open_warning": 0,
}
COLOURS = plt.get_cmap("tab10").colors
MAX_PER_KIND = 16  # a run with 100 metrics gets the first 16 of each kind, not 100 plots


@dataclass
class Plot:
    name: str  # file stem, e.g. "boot-spawn_to_exit"
    title: str
    fig: Figure

    _svg: str = field(default="", repr=False)  # the SVG, made once for file and page

    def _svg_text(self) -> str:
        if not self._svg:
            buf = io.StringIO()
            with plt.rc_context(STYLE):  # svg.* settings are read when saving
                self.fig.savefig(buf, format="svg", bbox_inches=None,
                                 metadata=_metadata("svg"))  # fmt: skip
            self._svg = buf.getvalue()
        return self._svg

    def save(self, directory: Path) -> list[Path]:
        out = []
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{self.name}.png"
            with plt.rc_context(STYLE):
                self.fig.savefig(path, metadata=_metadata("png"))
            out.append(path)
            path = directory / f"{self.name}.svg"
            path.write_text(self._svg_text())
            out.append(path)
        except OSError as exc:
            raise VirtbenchError(f"--plots {directory}: cannot write ({exc.strerror})") from None
        return out

    def svg(self, scope: str = "") -> str:
        """The figure as an inline <svg> element, its ids prefixed (by `scope`, e.g. the
        run id, and the plot's name) so that several plots in one page never share one."""
        text = self._svg_text()
        text = text[text.index("<svg") :]
        prefix = re.sub(r"[^a-zA-Z0-9]", "-", f"{scope}-{self.name}" if scope else self.name) + "-"
        text = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}\1"', text)
        text = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}\1)", text)
        return re.sub(r'href="#([^"]+)"', rf'href="#{prefix}\1"', text)

    def close(self) -> None:
        plt.close(self.fig)


def _metadata(ext: str) -> dict[str, str | None]:
    return {"Date": None} if ext == "svg" else {"Software": "virtbench"}


def _colour(order: list[str]) -> Callable[[str], tuple[float, ...]]:
    return lambda r: COLOURS[order.index(r) % len(COLOURS)] if r in order else COLOURS[-1]


def _ok(samples: list[Sample]) -> list[Sample]:
    return [s for s in samples if not s.warmup and not s.error and s.value is not None]


def _runtimes(samples: list[Sample], order: list[str]) -> list[str]:
    have = {s.runtime for s in samples}
    return [r for r in order if r in have] + sorted(have - set(order))


def _figure(title: str, ncols: int = 1, width: float = 6.4) -> tuple[Figure, list]:
    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols if ncols > 1 else width, 3.8),
                             squeeze=False)  # fmt: skip
    fig.suptitle(title, fontsize=10)
    return fig, list(axes[0])


def _drawn(s: Sample, kind: metrics.PlotKind) -> bool:
    """Does the registry have plot `kind` draw this sample's metric?"""
    return metrics.lookup(s.metric, s.workload).plot == kind


def _numeric_level(level: object) -> float | None:
    """A level's number: 16 (clients), or 40 of "read_write:40" (mariadb's test:threads)."""
    if isinstance(level, int | float) and not isinstance(level, bool):
        return float(level)
    if isinstance(level, str):
        m = re.fullmatch(r"[A-Za-z_.]+:(\d+)", level)
        if m:
            return float(m[1])
    return None


def _ci_err(sts: list) -> list[list[float]]:
    """Error bar lengths from each summary's 95% CI (0 where there is none)."""
    lo = [st.median - st.ci_low if not math.isnan(st.ci_low) else 0.0 for st in sts]
    hi = [st.ci_high - st.median if not math.isnan(st.ci_high) else 0.0 for st in sts]
    return [lo, hi]


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "_", text).strip("_")


def shared(tasks: list[Callable[[], T]]) -> Callable[[], list[T]]:
    """Do `tasks` on two CPUs: a child process (forked: it sees this process's data as it
    is now) starts taking them in order at once; the function returned takes the ones
    left in this process, then hands back every task's result in task order (a
    VirtbenchError raised in the child is raised again here). With one CPU, or one task,
    they are done now. The report draws its figures so while its tables and tests are
    worked out."""
    if len(os.sched_getaffinity(0)) < 2 or len(tasks) < 2:
        results = [task() for task in tasks]
        return lambda: results
    ctx = multiprocessing.get_context("fork")
    taken = ctx.Value("i", 0)  # the next task's index, whoever takes it
    receive, send = ctx.Pipe(duplex=False)

    def take() -> int:
        with taken.get_lock():
            taken.value += 1
            return taken.value - 1

    def child() -> None:
        done: dict[int, T] = {}
        try:
            while (i := take()) < len(tasks):
                done[i] = tasks[i]()
            send.send(("ok", done))
        except VirtbenchError as exc:
            send.send(("error", str(exc)))
        except BaseException as exc:  # said in the parent, as any internal error is
            send.send(("crash", f"{type(exc).__name__}: {exc}"))

    proc = ctx.Process(target=child, name="virtbench-shared", daemon=True)
    proc.start()
    send.close()

    def results() -> list[T]:
        mine: dict[int, T] = {}
        try:
            while (i := take()) < len(tasks):
                mine[i] = tasks[i]()
            reply = receive.recv()
        except EOFError:
            proc.join()
            raise VirtbenchError(f"a child drawing figures ended (exit {proc.exitcode}) "
                                 "before handing them back") from None  # fmt: skip
        except BaseException:  # this process failed: the child's work is not wanted
            proc.kill()
            proc.join()
            raise
        finally:
            receive.close()
        proc.join()
        kind, theirs = reply
        if kind == "error":
            raise VirtbenchError(theirs)
        if kind == "crash":
            raise RuntimeError(f"in the child drawing figures: {theirs}")
        every = {**theirs, **mine}
        return [every[i] for i in range(len(tasks))]

    return results
