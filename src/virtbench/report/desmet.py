"""DESMET-style scores against a baseline runtime (S5's feature analysis): per measure,
each runtime's score 0-4 against the baseline's median, features weighted by importance,
and a weighted mean per runtime. `desmet_scores` computes them; `desmet_table` draws
them; `desmet` does both for the report (html.py)."""

from __future__ import annotations

import dataclasses
import fnmatch
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from virtbench import metrics
from virtbench.report import compare as cmp
from virtbench.report.cells import Rows, quantity
from virtbench.report.compare import label
from virtbench.report.findings import HtmlTable, ScoreOptions, condition_groups, median_of
from virtbench.report.fits import baseline_refusal, cost_cells, cost_fits
from virtbench.store.frame import Frame, as_frame

# A result scores 0-4: one point per band it meets, as a percentage of the baseline's median.
DESMET_BANDS = {
    "higher": (60.0, 70.0, 80.0, 90.0),  # throughput-like: at least this % of the baseline
    "lower": (140.0, 130.0, 120.0, 110.0),  # latency-like: at most this %
    "boot": (40.0, 30.0, 20.0, 10.0),  # boot-like: at most this % (S5 scored boot so)
}


def desmet_score(
    value: float, baseline: float, kind: str, bands: Mapping[str, Sequence[float]] | None = None
) -> float:
    """0-4 (nan when either median is missing or the baseline is 0). `kind`: "higher",
    "lower" or "boot" (lower is better, scored on its own bands)."""
    if math.isnan(value) or math.isnan(baseline) or baseline == 0:
        return math.nan
    pct = value / baseline * 100
    thresholds = (bands or DESMET_BANDS)[kind]
    if kind == "higher":
        return float(sum(pct >= t for t in thresholds))
    return float(sum(pct <= t for t in thresholds))


def desmet_weight(measure: str, weights: dict[str, float], metric: str = "") -> float:
    """A measure's importance: the first pattern of `weights` (fnmatch) that its row's
    name or its metric's full name (`boot.spawn_to_exit`) matches, else 1."""
    names = [n for n in (measure, metric) if n]
    return next(
        (w for pat, w in weights.items() if any(fnmatch.fnmatchcase(n, pat) for n in names)), 1.0
    )


@dataclass(frozen=True)
class Condition:
    """A condition's key (`compare.condition_rows` without the runtime, as
    `condition_groups` keys its values) by field name."""

    experiment: str
    metric: str
    unit: str
    workload: str
    background: str
    attacker: str
    placement: str
    level: str

    @classmethod
    def of(cls, key: tuple[str, ...]) -> Condition:
        """The condition a key stands for."""
        return cls(*key)

    @property
    def key(self) -> tuple[str, ...]:
        """The key again, as `compare.label` reads it."""
        return dataclasses.astuple(self)

    @property
    def base_metric(self) -> str:
        """The metric's full name without its level (`x.tps@64` -> `x.tps`)."""
        return self.metric.partition("@")[0]

    def feature(self) -> str:
        """The measure without its level: what the scores of a swept measure's levels are
        summed under."""
        return label(dataclasses.replace(self, metric=self.base_metric, level="").key)


@dataclass(frozen=True)
class Level:
    """One scored row: its first cells (measure, bands, baseline figure) and the score of
    each other runtime that has one."""

    cells: list[str]
    scores: dict[str, float]


@dataclass(frozen=True)
class Feature:
    """A measure as DESMET counts it: its rows (several for a measure swept over levels)
    and its weight."""

    name: str
    weight: float
    levels: list[Level]

    def scores_of(self, runtime: str) -> list[float]:
        """The runtime's scores over the levels, where it has one."""
        return [level.scores[runtime] for level in self.levels if runtime in level.scores]

    def mean(self, runtime: str) -> float | None:
        """The runtime's mean score over the levels (what counts once), None without any."""
        scores = self.scores_of(runtime)
        return sum(scores) / len(scores) if scores else None


@dataclass(frozen=True)
class Scores:
    """The DESMET scores of a set of samples, before they are drawn as a table."""

    baseline: str
    boot_baseline: str
    others: list[str]  # the runtimes scored, in order; none: nothing to score (no table)
    features: list[Feature]  # in the order first measured
    refused: list[str]  # measures not scored, and why
    note: str


@dataclass(frozen=True)
class Reference:
    """What a row is scored against: the reference `value`, the `kind` of score (boot,
    lower or higher is better) and the `runtime` the value is of (none of its own)."""

    value: float
    kind: str
    runtime: str


class _Scorer:
    """Collects the scored rows of `desmet_scores` by feature, in the order first met, and
    the measures it refuses to score."""

    def __init__(self, others: list[str], bands: dict[str, tuple[float, ...]]) -> None:
        self.others = others
        self.bands = bands
        self.levels: dict[str, list[Level]] = defaultdict(list)
        self.metric_of: dict[str, str] = {}  # feature -> its metric's full name (for weights)
        self.refused: list[str] = []

    def add(self, feature: str, cells: list[str], values: dict[str, float], ref: Reference) -> None:
        """A row of `feature`: each other runtime's score of its value against `ref`
        (none for the runtime `ref` is of)."""
        got: dict[str, float] = {}
        for r in self.others:
            if r not in values:
                continue
            score = desmet_score(values[r], ref.value, ref.kind, self.bands)
            if not math.isnan(score) and r != ref.runtime:
                got[r] = score
        self.levels[feature].append(Level(cells, got))

    def measured(self, f: Frame, base: str, boot_base: str) -> None:
        """The compared figures, each against the baseline's median (boot against the
        boot baseline's; not at all against native's)."""
        direction = {
            Condition.of(key): f.labels["direction"][f.codes["direction"][rows[0]]]
            for key, rows in cmp.condition_rows(f, False, lambda m: True).items()
        }
        for key, by_rt in condition_groups(f).items():
            c = Condition.of(key)
            boot = metrics.lookup(c.metric, c.workload).desmet == "boot"
            ref_rt = boot_base if boot else base
            if (boot and boot_base == "native") or ref_rt not in by_rt:
                continue
            kind = "boot" if boot else direction[c]
            ref = median_of(by_rt[ref_rt])
            why = cmp.refusal(c.metric, c.workload, ref, ref_rt)
            if why:  # a score is a ratio to the baseline: none against nothing
                self.refused.append(f"{label(c.key)} not scored: {why}")
                continue
            figure = quantity(ref, c.unit)[0] + (f" ({ref_rt})" if boot else "")
            medians = {r: median_of(by_rt.get(r, [])) for r in self.others}
            feature = c.feature()
            self.metric_of[feature] = c.base_metric
            self.add(feature, [label(c.key), kind, figure], medians, Reference(ref, kind, ref_rt))

    def fitted(self, f: Frame, base: str) -> None:
        """The memory costs (report/fits.py): each slope against the baseline's."""
        fits = cost_fits(f)
        for m in metrics.fitted():
            ref_fit = fits.get((m.name, base))
            if ref_fit is None or not any((m.name, r) in fits for r in self.others):
                continue
            named = metrics.label(m.name)
            why = baseline_refusal(ref_fit, m.name, base)
            if why:
                self.refused.append(f"{named} not scored: {why}")
                continue
            cells = [named, "lower", cost_cells(ref_fit, m.name)[0]]
            slopes = {
                r: fits[(m.name, r)].slope if (m.name, r) in fits else math.nan for r in self.others
            }
            self.metric_of[named] = m.name
            self.add(named, cells, slopes, Reference(ref_fit.slope, "lower", base))

    def features(self, weights: dict[str, float]) -> list[Feature]:
        """The features collected, each weighed as `weights` says."""
        return [
            Feature(name, desmet_weight(name, weights, self.metric_of.get(name, name)), levels)
            for name, levels in self.levels.items()
        ]


def desmet_scores(samples: Rows, order: list[str], opts: ScoreOptions) -> Scores:
    """Each runtime's DESMET scores against the baseline (`desmet`); no other runtime to
    score (`others` empty) when the baseline has no samples or no other runtime does."""
    f = as_frame(samples)
    measured = set(f.distinct("runtime"))
    have = [r for r in order if r in measured]
    base = opts.baseline or ("native" if "native" in have else (have[0] if have else ""))
    boot_base = opts.boot_baseline or base
    others = [r for r in have if r != base]
    if base not in have or not others:
        return Scores(base, boot_base, [], [], [], "")
    note = ""
    if boot_base == "native":
        note = (
            "Boot is not scored against native, whose boot is a process start: give "
            "--boot-baseline (S5 scored boot against a VM)."
        )
    scorer = _Scorer(others, opts.bands)
    scorer.measured(f, base, boot_base)
    scorer.fitted(f, base)
    return Scores(base, boot_base, others, scorer.features(opts.weights), scorer.refused, note)


def _show(value: float | None) -> str:
    """A score's cell: "n/a" for none, whole scores without decimals."""
    return "n/a" if value is None else f"{value:.0f}" if value == int(value) else f"{value:.2f}"


def _feature_rows(feature: Feature, others: list[str]) -> list[list[str]]:
    """A feature's rows: one per level, then for a swept measure its levels' sum and their
    mean (which counts once)."""
    levels, weight = feature.levels, f"{feature.weight:g}"
    rows = [
        [*level.cells, weight if len(levels) == 1 else ""]
        + [_show(level.scores.get(r)) for r in others]
        for level in levels
    ]
    if len(levels) > 1:
        sums = [feature.scores_of(r) for r in others]
        rows.append(
            [f"{feature.name}: sum over {len(levels)} levels", "", "", ""]
            + [_show(sum(v)) if v else "n/a" for v in sums]
        )
        rows.append(
            [f"{feature.name}: mean over levels (counts once)", "", "", weight]
            + [_show(sum(v) / len(v)) if v else "n/a" for v in sums]
        )
    return rows


def _weighted_mean_row(scores: Scores) -> list[str]:
    """The last row: each runtime's weighted mean feature score, over the features it has."""
    cells = ["weighted mean score", "", "", ""]
    for r in scores.others:
        means = [(ft.weight, x) for ft in scores.features if (x := ft.mean(r)) is not None]
        total = sum(w for w, _ in means)
        cells.append(
            f"{sum(w * x for w, x in means) / total:.2f} (n={len(means)})"
            if means and total
            else "n/a"
        )
    return cells


def desmet_table(scores: Scores) -> HtmlTable:
    """The DESMET table of `scores`: a row per scored level (and a swept measure's sum and
    mean), then the weighted mean; the refused measures are its notes."""
    rows = [row for feature in scores.features for row in _feature_rows(feature, scores.others)]
    rows.append(_weighted_mean_row(scores))
    headers = ["measure", "bands", f"baseline {scores.baseline}", "weight", *scores.others]
    numeric = [False, False, True, True] + [True] * len(scores.others)
    return HtmlTable("DESMET scores", headers, rows, numeric, scores.refused)


def desmet(
    samples: Rows, order: list[str], opts: ScoreOptions
) -> tuple[str, HtmlTable | None, str]:
    """(baseline, table or None, note): per measure each runtime's score 0-4 against the
    baseline's median (boot against the boot baseline's). A measure swept over levels
    (connections, threads) is one feature: its levels' scores, their sum and their mean,
    which counts once. Each feature weighs as `opts.weights` says (default 1); the last
    row is each runtime's weighted mean feature score, as S5 ranked its candidates. No
    table when the baseline has no samples or no other runtime does."""
    scores = desmet_scores(samples, order, opts)
    if not scores.others:
        return scores.baseline, None, ""
    return scores.baseline, desmet_table(scores), scores.note
