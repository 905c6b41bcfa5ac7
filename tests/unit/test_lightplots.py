"""The boot figures drawn without matplotlib (report/lightplots.py, the site's run pages):
well-formed SVG that draws every sample, each runtime's box at its quartiles, the CDF
reaching 1, the medians in their order with their CIs; and a site page draws them so,
never starting matplotlib."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from tests.fakerun import fake_run

from virtbench.report import lightplots
from virtbench.report.plotkit import spread_wide, tick_text
from virtbench.report.svgplot import Axis
from virtbench.store import Sample, Store

NS = "{http://www.w3.org/2000/svg}"


def _boots(medians: dict[str, float], n: int = 40) -> list[Sample]:
    rng = np.random.default_rng(1)
    out = []
    for r, m in medians.items():
        for i in range(n):
            for metric, scale in (("boot.spawn_to_exit", 1.0), ("boot.teardown", 0.25)):
                value = float(m * scale * rng.lognormal(0, 0.05))
                unit = {"unit": "ms", "direction": "lower", "workload": "hello"}
                out.append(Sample("boot", metric, value, runtime=r, repetition=i, **unit))
    return out


def test_every_sample_is_drawn_over_its_box_and_the_cdf_reaches_one() -> None:
    medians = {"native": 20.0, "crun": 22.0, "runsc": 36.0}
    plots = lightplots.boot(_boots(medians), list(medians))
    assert [p.name for p in plots] == ["boot-boot.spawn_to_exit", "boot-boot.teardown"]
    svg = ET.fromstring(plots[0].svg())
    dots = svg.findall(f".//{NS}g/{NS}circle")
    assert len(dots) == 3 * 40  # every sample, none left out
    boxes = [r for r in svg.iter(f"{NS}rect") if r.get("fill-opacity") == "0.35"]
    assert len(boxes) == 3
    tops = [float(b.get("y", "0")) for b in boxes]
    assert tops[0] > tops[1] > tops[2]  # a slower runtime's box stands higher
    paths = [p.get("d", "") for p in svg.iter(f"{NS}path")]
    assert len(paths) == 3 and all(d.count("H") == 39 for d in paths)
    texts = [t.text for t in svg.iter(f"{NS}text")]
    assert "fraction of samples" in texts and "time to run and exit (ms)" in texts
    assert any(t.endswith(" ms") for t in texts if t)


def test_the_medians_stand_in_order_with_their_intervals() -> None:
    medians = {"native": 20.0, "runc": 30.0, "runsc": 60.0}
    [plot] = lightplots.startup(_boots(medians), list(medians))
    svg = ET.fromstring(plot.svg())
    groups = [g for g in svg.iter(f"{NS}g") if g.get("stroke")]
    start = groups[0]  # the first panel: time to run and exit
    ys = [float(c.get("cy", "0")) for c in start.findall(f"{NS}circle")]
    assert len(ys) == 3 and ys[0] > ys[1] > ys[2]  # pixels grow downwards
    assert len(start.findall(f"{NS}line")) == 3 * 3  # a whisker and its two caps each
    assert [t.text for t in svg.iter(f"{NS}text")].count("Teardown") == 1


def test_axes_read_as_numbers_with_units_and_go_log_only_across_a_decade() -> None:
    assert not spread_wide([1.0, 9.0]) and spread_wide([1.0, 11.0])
    assert not spread_wide([0.0, 100.0])  # a zero has no place on a log axis
    axis = Axis.of([3.0, 47.0], 300, 0, log=False, zero=True)
    assert axis.lo == 0 and axis.hi >= 47 and axis.at(axis.lo) == 300 and axis.at(axis.hi) == 0
    assert [tick_text(t, "ms") for t in axis.ticks()][:3] == ["0", "10 ms", "20 ms"]
    log = Axis.of([2.0, 400.0], 0, 100, log=True, zero=False)
    assert log.ticks()[0] == 1 and 500 in log.ticks() and log.at(10) == pytest.approx(100 / 3)


def test_a_site_page_draws_a_boot_run_without_matplotlib(tmp_path: Path) -> None:
    store = Store(tmp_path / "results")
    fake_run(store, "light1", {"native": 1.0, "crun": 1.1}, ("boot",), n=20)
    store.close()
    probe = f"""
import json, sys
from virtbench.report import html
from pathlib import Path
from virtbench.store import Store
page = html.render(Store(Path({str(tmp_path / "results")!r})), ["light1"],
                   html.Options(plots_dir=None, light_plots=True))
print(json.dumps([page.count("<figure><svg"), "matplotlib" in sys.modules]))
"""
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    figures, loaded = json.loads(res.stdout.strip().splitlines()[-1])
    assert figures >= 2 and not loaded, res.stderr
