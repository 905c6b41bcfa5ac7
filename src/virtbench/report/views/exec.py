"""`exec`: which runtime runs a command inside a running instance fastest (a one-line
command, exec call -> exit); every figure summarised; each figure's median and tail per
runtime."""

from __future__ import annotations

from virtbench.experiments.exec import STDOUT_1MIB, TRUE
from virtbench.report import plots_sandbox
from virtbench.report.views.kind import View, median_question

VIEW = View(
    "exec",
    title="A command in a running instance",
    about=(
        "A command run inside a running instance through the runtime's own exec: from the"
        " call to its output read and its exit seen."
    ),
    order=20,
    answers=median_question(
        "Fastest command in a running instance",
        TRUE.name,
        "{a} runs a command {x} faster than {b}",
    ),
    plots=(
        lambda d: plots_sandbox.operations(
            d.samples,
            d.order,
            "exec-latency",
            "A command in a running instance: exec call -> exit, output read",
            (TRUE.name, STDOUT_1MIB.name),
        ),
    ),
)
