"""The plots of fake-runtime runs (tests/fakerun.py) and of the studies' figures: one
for every experiment kind, as PNG and SVG, each drawing the values that were measured
(the page they sit in: test_report.py)."""

from __future__ import annotations

import re

from tests.fakerun import fake_run

from virtbench.report import sections
from virtbench.store import Sample, Store

ALL = ("boot", "density", "throughput", "scalability", "isolation")


def test_plots_for_every_experiment_kind_as_png_and_svg(tmp_path):
    store = Store(tmp_path)
    rid = fake_run(store, "aaaaa1", {"native": 1.0, "crun": 1.05, "runsc": 1.6}, ALL)
    figs = sections.figures(store.samples(rid), ["native", "crun", "runsc"])
    names = [p.name for p in figs]
    assert names == [  # each experiment type's own, in the order its answers are read
        "startup-medians",
        "boot-boot.spawn_to_exit",
        "boot-boot.teardown",
        "density-memory-per-instance",
        "latency-latency_tcp.64B",
        "concurrency-postgres-tps",
        "medians-postgres-tps",
        "medians-latency-tcp.64B.rtt_p50",
        "isolation-sqlite-inserts_per_s",
        "isolation-relative-sqlite-inserts_per_s",
        "scalability-hello-boot.spawn_to_exit",
    ]
    written = figs[0].save(tmp_path / "plots")
    assert [p.suffix for p in written] == [".png", ".svg"]
    assert written[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svgs = [p.svg() for p in figs]
    for p in figs:
        p.close()
    ids = [i for s in svgs for i in re.findall(r'\bid="([^"]+)"', s)]
    assert len(ids) == len(set(ids))  # inline in one page: no id twice
    assert all(s.startswith("<svg") for s in svgs)


def smp(metric, value, runtime="native", rep=0, **kw):
    """A sample the test chose, a syscall's time in ns unless `kw` says otherwise."""
    base = {
        "experiment": "throughput",
        "unit": "ns",
        "direction": "lower",
        "workload": "syscall",
    }
    return Sample(metric=metric, value=value, runtime=runtime, repetition=rep, **{**base, **kw})


def studies_measured() -> tuple[list[Sample], list[tuple[str, float, float]]]:
    """The samples and host series the studies' figures are drawn from: read and page
    fault times by size (S4), boot times and image sizes (S3), inserts alone and beside
    an attacker (S1), an nginx server's and its daemon's CPU and memory (S2)."""
    samples = []
    for rep in range(5):
        for size, ns in ((1, 100.0), (256, 120.0), (8192, 300.0)):
            samples.append(smp(f"read_{size}b_ns", ns + rep, rep=rep))
            samples.append(smp(f"read_{size}b_ns", 2 * ns + rep, "runsc", rep=rep))
        for pages, ns in ((1, 900.0), (10, 9000.0)):
            samples.append(smp(f"page_fault_{pages}p_ns", ns, rep=rep))
        samples.append(
            smp("boot.spawn_to_ready", 10.0 + rep, experiment="boot", unit="ms", workload="sleep")
        )
        samples.append(
            smp(
                "boot.spawn_to_ready",
                1000.0 + rep,
                "runsc",
                experiment="boot",
                unit="ms",
                workload="sleep",
            )
        )
        for runtime, ips in (("native", 1000.0), ("runsc", 400.0)):
            iso = {
                "experiment": "isolation",
                "unit": "inserts/s",
                "direction": "higher",
                "workload": "sqlite",
                "rep": rep,
            }
            samples.append(smp("inserts_per_s", ips, runtime, **iso))
            samples.append(
                smp("inserts_per_s", ips / 2, runtime, attacker="cpu", placement="same-cpu", **iso)
            )
    for runtime, mib in (("native", 12.5), ("runsc", 400.0)):
        samples.append(
            smp(
                "image_size",
                mib,
                runtime,
                experiment="image",
                unit="MiB",
                params={"measured_by": "du"},
            )
        )
    series = [
        (f"proc/native/nginx/throughput,0,,,0/30/{part}.{m}", 100.0 + t, v)
        for t in range(3)
        for part in ("instance", "daemon")
        for m, v in (("cpu_pct", 50.0 + t), ("rss_mib", 20.0))
    ]
    return samples, series


def test_the_studies_figures_draw_what_was_measured():
    """Payload sweep (S4), startup and image bars (S3), relative isolation bars (S1) and a
    server's resource series (S2), from samples and series whose values the test chose."""
    samples, series = studies_measured()
    figs = {p.name: p for p in sections.figures(samples, ["native", "runsc"], series)}
    assert {
        "syscall-payload",
        "startup-medians",
        "image-sizes",
        "resources-nginx",
        "isolation-relative-sqlite-inserts_per_s",
    } <= set(figs)
    payload = figs["syscall-payload"].fig.axes
    read = next(ax for ax in payload if ax.get_title() == "read")
    assert list(read.lines[0].get_xdata()) == [1, 256, 8192]
    assert list(read.lines[0].get_ydata()) == [102.0, 122.0, 302.0]  # medians of 5
    faults = next(ax for ax in payload if ax.get_title() == "page faults")
    assert list(faults.lines[0].get_xdata()) == [1, 10]
    startup = figs["startup-medians"].fig.axes[0]
    assert startup.get_yscale() == "log" and not startup.patches  # dots, never bars on a log
    assert list(startup.lines[0].get_ydata()) == [12, 1002]  # the medians
    ticks = startup.yaxis.get_major_formatter()
    assert [ticks(v, 0) for v in (10.0, 100.0, 1000.0)] == ["10 ms", "100 ms", "1,000 ms"]
    sizes = figs["image-sizes"].fig.axes[0]
    assert sizes.get_yscale() == "log" and sizes.yaxis.get_major_formatter()(100.0, 0) == "100 MiB"
    same = [x for x in samples if x.metric != "image_size" or x.runtime == "native"]
    same += [smp("image_size", 12.5, "runsc", experiment="image", unit="MiB")]
    assert "image-sizes" not in {p.name for p in sections.figures(same, ["native", "runsc"])}
    rel = figs["isolation-relative-sqlite-inserts_per_s"].fig.axes[0]
    assert [round(b.get_height(), 3) for b in rel.patches] == [0.5, 0.5]  # half as fast
    cpu = figs["resources-nginx"].fig.axes[0]
    assert [list(line.get_xdata()) for line in cpu.lines] == [[0.0, 1.0, 2.0]] * 2
    for p in figs.values():
        p.close()
