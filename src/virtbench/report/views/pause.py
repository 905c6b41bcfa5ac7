"""`pause`: which runtime comes back from a pause fastest (resume call -> the next
heartbeat); every figure summarised; each figure's median and tail per runtime."""

from __future__ import annotations

from virtbench.experiments.pause import PAUSE, RESUME, RESUME_TO_READY
from virtbench.report import plots_sandbox
from virtbench.report.views.kind import View, median_question

VIEW = View(
    "pause",
    title="Pause and resume",
    about=(
        "A running instance paused and resumed through the runtime's own commands: the "
        "calls, and resume to its next heartbeat."
    ),
    order=30,
    answers=median_question(
        "Fastest back from a pause",
        RESUME_TO_READY.name,
        "{a} comes back {x} faster than {b}",
    ),
    plots=(
        lambda d: plots_sandbox.operations(
            d.samples,
            d.order,
            "pause-resume",
            "Pause and resume: the calls, and resume -> the next heartbeat",
            (PAUSE.name, RESUME.name, RESUME_TO_READY.name),
        ),
    ),
)
