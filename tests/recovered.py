"""How a test of the fake runtime (tests/unit/test_truth*.py) holds what virtbench reports
to the truth it injected: every point estimate within a tolerance, and the 95% CIs holding
the truth but for the misses such intervals make by chance (allowed at a 1% risk)."""

from __future__ import annotations

from scipy import stats as sps

from virtbench.analysis.stats import summarize


def covered(cases: list[tuple[str, float, float, float, float]], tolerance: float) -> None:
    """`cases`: (what, truth, estimate, CI low, CI high). Every estimate is within
    `tolerance` of the truth (relative); the truth lies in the CIs but for the misses
    that 95% intervals make by chance (allowed at a 1% risk)."""
    far = [c for c in cases if abs(c[2] - c[1]) > tolerance * abs(c[1])]
    assert not far, f"estimates off the truth by more than {tolerance:.0%}: {far}"
    misses = [c for c in cases if not c[3] <= c[1] <= c[4]]
    allowed = int(sps.binom.ppf(0.99, len(cases), 0.05)) if len(cases) > 1 else 0
    assert len(misses) <= allowed, f"{len(misses)} CIs of {len(cases)} miss the truth: {misses}"


def median_case(
    what: str, truth: float, vals: list[float]
) -> tuple[str, float, float, float, float]:
    st = summarize(vals)
    assert st.n >= 10, (what, st.n)
    return what, truth, st.median, st.ci_low, st.ci_high
