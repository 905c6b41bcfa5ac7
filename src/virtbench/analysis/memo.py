"""Results kept by the value of their arguments: a report, a site page and `show` ask for
the same interval of the same values several times (a table, an answer, the run's JSON),
and a bootstrap is the costliest thing they do. Arrays are keyed by their dtype, shape
and bytes, so equal values give the kept result and anything else is worked out."""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

R = TypeVar("R")
_ALL: list[OrderedDict[Hashable, Any]] = []  # every function's kept results


def forget() -> None:
    """Drop every kept result (a benchmark timing the work from cold)."""
    for kept in _ALL:
        kept.clear()


def _key(arg: object) -> Hashable:
    if isinstance(arg, np.ndarray):
        return (arg.dtype.str, arg.shape, arg.tobytes())
    assert isinstance(arg, Hashable), type(arg)  # a number, a string, None
    return arg


def by_value(size: int) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Keep the last `size` results of a pure function of arrays and plain values; what it
    returns must not be changed by its callers (tuples of floats)."""

    def wrap(fn: Callable[..., R]) -> Callable[..., R]:
        kept: OrderedDict[Hashable, R] = OrderedDict()
        _ALL.append(kept)

        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> R:
            key = (*map(_key, args), *((k, _key(v)) for k, v in sorted(kwargs.items())))
            if key in kept:
                kept.move_to_end(key)
                return kept[key]
            result = kept[key] = fn(*args, **kwargs)
            if len(kept) > size:
                kept.popitem(last=False)
            return result

        return inner

    return wrap
