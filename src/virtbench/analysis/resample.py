"""The resamples behind every interval of the median (analysis/stats.py): a group's
BOOTSTRAP_RESAMPLES bootstrap medians, its units drawn with replacement (each bringing
all its values), from a random stream of the group's own, and kept by value: a report, a
site page and `show` ask for the same group's interval, standing and change, and the
resampling is the costliest thing they do."""

from __future__ import annotations

import hashlib

import numpy as np

from virtbench.analysis.memo import by_value

BOOTSTRAP_RESAMPLES = 2000


def _cluster_medians(values: np.ndarray, unit: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Medians of BOOTSTRAP_RESAMPLES cluster resamples: the units drawn with replacement,
    each bringing all its values (a weighted median over the sorted values)."""
    k = int(unit.max()) + 1
    if k == values.size:  # one value per unit: the plain bootstrap
        return _boot_medians(values, rng)
    order = np.argsort(values, kind="stable")
    return _weighted_medians(values[order], resample_counts(k, rng, np.int32)[:, unit[order]])


@by_value(1024)
def medians(values: np.ndarray, unit: np.ndarray, seed: int, salt: int) -> np.ndarray:
    """A group's cluster-bootstrap medians, from a random stream of its own: seeded by
    `seed` and the group's values and units, so the same group gets the same resamples
    wherever it is asked for (its interval, a standing, a change: resampled once) and
    two different groups independent ones. `salt` gives an identical group a stream of
    its own (the other side of a ratio of two equal groups). Read-only."""
    digest = hashlib.blake2b(values.tobytes() + b"/" + unit.tobytes(), digest_size=8)
    rng = np.random.default_rng((seed, int.from_bytes(digest.digest(), "little"), salt))
    out = _cluster_medians(values, unit, rng)
    out.flags.writeable = False
    return out


def _row_counts(draws: np.ndarray, k: int) -> np.ndarray:
    """How often each of 0..k-1 appears in each row of `draws` (one bincount of the rows
    laid end to end: np.add.at's result, many times faster)."""
    rows = draws.shape[0]
    flat = (draws + (np.arange(rows) * k)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * k).reshape(rows, k)


def resample_counts(k: int, rng: np.random.Generator, dtype: type = float) -> np.ndarray:
    """How often each of k units is drawn (with replacement, k draws) in each of
    BOOTSTRAP_RESAMPLES resamples: the weights of a cluster bootstrap."""
    draws = rng.integers(0, k, size=(BOOTSTRAP_RESAMPLES, k))
    return _row_counts(draws, k).astype(dtype)


def _weighted_medians(sorted_values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each row's weighted median of `sorted_values` (ascending): the value where the
    cumulative weight reaches half, or the average of the two middle values where the
    weight splits evenly (np.median's, for whole-number weights)."""
    cum = np.cumsum(weights, axis=1, dtype=weights.dtype)
    half = cum[:, -1:] / 2
    lower = np.argmax(cum >= half, axis=1)
    upper = np.argmax(cum > half, axis=1)
    medians: np.ndarray = (sorted_values[lower] + sorted_values[upper]) / 2
    return medians


def _boot_medians(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Medians of BOOTSTRAP_RESAMPLES resamples (with replacement) of `values`: each
    resample drawn as ranks in the sorted values (a value drawn uniformly is a rank drawn
    uniformly; small integers, quick to draw and sort), its median read at the middle
    ranks (the same numbers as np.median of each resample)."""
    n = values.size
    small = np.int16 if n <= np.iinfo(np.int16).max else np.intp
    ranks = rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n), dtype=small)
    ranks.sort(axis=1)
    ascending = np.sort(values)
    medians: np.ndarray = (ascending[ranks[:, (n - 1) // 2]] + ascending[ranks[:, n // 2]]) / 2
    return medians


def salt_of(b: np.ndarray, ub: np.ndarray, a: np.ndarray, ua: np.ndarray) -> int:
    """1 when the two groups are the same values in the same units (their streams would
    be one: each side must be resampled independently), else 0."""
    same = b.shape == a.shape and np.array_equal(b, a) and np.array_equal(ub, ua)
    return int(same and b.dtype == a.dtype)
