"""The artifact's size on disk as each runtime keeps it (recorded once per runtime and
run, under the `image` pseudo-type): summarised, and drawn where the sizes differ."""

from __future__ import annotations

from virtbench.report import plots_studies
from virtbench.report.views.kind import View

VIEW = View(
    "image",
    title="Image size",
    about=("The artifact as each runtime keeps it on disk to start it."),
    order=200,
    plots=(lambda d: plots_studies.image(d.samples, d.order),),
)
