"""A run's samples as columns: what the reading commands summarise, without a Python
object per sample.

Each text field of a sample (experiment, metric, unit, direction, runtime, workload,
attacker, placement, error, params as its JSON text, host) is a column of small integer
codes into that field's labels; the numbers (value, NaN where none; repetition;
background; warmup; emulated; t) are numpy arrays. `groups` splits the rows by any of
the fields at numpy speed, `take` keeps some rows, `samples` turns a few rows back into
`Sample` records. The store keeps a run's frame beside its samples (`Store.frame`),
so reading a big run does not convert every row again.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from virtbench.store.records import Sample

TEXT = (
    "experiment",
    "metric",
    "unit",
    "direction",
    "runtime",
    "workload",
    "attacker",
    "placement",
    "error",
    "params",
    "host",
)
NUMBERS = {
    "value": np.float64,
    "repetition": np.int64,
    "background": np.int64,
    "warmup": np.bool_,
    "emulated": np.bool_,
    "t": np.float64,
}
COLUMNS = (
    "experiment",
    "metric",
    "value",
    "unit",
    "direction",
    "runtime",
    "workload",
    "repetition",
    "background",
    "attacker",
    "placement",
    "warmup",
    "emulated",
    "error",
    "params",
    "host",
    "t",
)  # Sample's fields, in its order


@dataclass
class Frame:
    """Columns of samples, in the order they were measured."""

    # (codes and numbers: dicts, or some rows of another frame's: `take`)
    codes: Mapping[str, np.ndarray]  # text field -> int32 code per row
    labels: dict[str, list[str]]  # text field -> its distinct values
    numbers: Mapping[str, np.ndarray]  # numeric field -> one value per row
    _params: dict[int, dict[str, Any]] = field(default_factory=dict, repr=False)
    _keys: dict[str, tuple[np.ndarray, list[Any]]] = field(default_factory=dict, repr=False)
    memo: dict[str, Any] = field(default_factory=dict, repr=False)  # what readers derive once

    # --- building ---------------------------------------------------------------------
    @classmethod
    def from_rows(cls, rows: Iterable[Sequence[Any]]) -> Frame:
        """From rows of COLUMNS' values (params as JSON text, value None when failed)."""
        cols: list[list[Any]] = [[] for _ in COLUMNS]
        appends = [c.append for c in cols]
        for row in rows:
            for add, x in zip(appends, row, strict=True):
                add(x)
        data = dict(zip(COLUMNS, cols, strict=True))
        codes, labels = {}, {}
        for name in TEXT:
            index: dict[str, int] = {}
            codes[name] = np.fromiter(
                (index.setdefault(x, len(index)) for x in data[name]),
                dtype=np.int32,
                count=len(data[name]),
            )
            labels[name] = list(index)
        numbers = {}
        for name, dtype in NUMBERS.items():
            raw = data[name]
            if name == "value":
                numbers[name] = np.asarray(raw, dtype=object).astype(np.float64)  # None: NaN
                continue
            numbers[name] = np.asarray(raw, dtype=dtype)
        return cls(codes, labels, numbers)

    @classmethod
    def from_samples(cls, samples: Iterable[Sample]) -> Frame:
        rows = (
            (
                s.experiment,
                s.metric,
                s.value,
                s.unit,
                s.direction,
                s.runtime,
                s.workload,
                s.repetition,
                s.background,
                s.attacker,
                s.placement,
                s.warmup,
                s.emulated,
                s.error,
                json.dumps(s.params, sort_keys=True),
                s.host,
                s.t,
            )
            for s in samples
        )
        return cls.from_rows(rows)

    @classmethod
    def concat(cls, frames: Sequence[Frame]) -> Frame:
        """The rows of `frames`, one after the other (their labels merged)."""
        if len(frames) == 1:
            return frames[0]
        codes, labels = {}, {}
        for name in TEXT:
            merged: dict[str, int] = {}
            parts = []
            for fr in frames:
                remap = np.array(
                    [merged.setdefault(x, len(merged)) for x in fr.labels[name]], dtype=np.int32
                )
                parts.append(remap[fr.codes[name]] if remap.size else fr.codes[name])
            codes[name], labels[name] = np.concatenate(parts).astype(np.int32), list(merged)
        numbers = {k: np.concatenate([fr.numbers[k] for fr in frames]) for k in NUMBERS}
        return cls(codes, labels, numbers)

    def to_bytes(self) -> bytes:
        arrays: dict[str, Any] = {
            f"c_{k}": v.astype(_code_type(len(self.labels[k]))) for k, v in self.codes.items()
        }
        arrays |= {f"n_{k}": v for k, v in self.numbers.items()}
        arrays["labels"] = np.frombuffer(json.dumps(self.labels).encode(), dtype=np.uint8)
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Frame:
        with np.load(io.BytesIO(data)) as z:
            labels = json.loads(z["labels"].tobytes())
            codes = {k: z[f"c_{k}"] for k in TEXT}
            numbers = {k: z[f"n_{k}"] for k in NUMBERS}
        return cls(codes, labels, numbers)

    # --- reading ----------------------------------------------------------------------
    def __len__(self) -> int:
        if isinstance(self.numbers, _Rows):
            return int(self.numbers.index.size)
        return int(self.numbers["t"].size)

    def __getattr__(self, name: str) -> np.ndarray:
        if name in NUMBERS:
            return self.numbers[name]
        raise AttributeError(name)

    def code(self, name: str, label: str) -> int:
        """The code of `label` in text field `name`, -1 when no row has it."""
        try:
            return self.labels[name].index(label)
        except ValueError:
            return -1

    def where(self, name: str, label: str) -> np.ndarray:
        """The rows whose text field `name` is `label`."""
        code = self.code(name, label)
        if code < 0:
            return np.zeros(len(self), dtype=bool)
        rows: np.ndarray = self.codes[name] == code
        return rows

    def column(self, name: str) -> np.ndarray:
        """A text field's values, one per row (an object array)."""
        values: np.ndarray = np.asarray(self.labels[name], dtype=object)[self.codes[name]]
        return values

    def distinct(self, name: str) -> list[str]:
        """A text field's values in the order they first appear."""
        codes = self.codes[name]
        _, first = np.unique(codes, return_index=True)
        return [self.labels[name][codes[i]] for i in np.sort(first)]

    @property
    def failed(self) -> np.ndarray:
        return ~self.where("error", "")

    @property
    def ok(self) -> np.ndarray:
        """Successful measurements with a finite value."""
        rows: np.ndarray = ~self.failed & np.isfinite(self.numbers["value"])
        return rows

    def params_of(self, code: int) -> dict[str, Any]:
        if code not in self._params:
            self._params[code] = json.loads(self.labels["params"][code])
        return self._params[code]

    def param(self, key: str, default: Any = None) -> np.ndarray:
        """The params' `key`, one per row (an object array; `default` where absent)."""
        per = [self.params_of(i).get(key, default) for i in range(len(self.labels["params"]))]
        out = np.empty(len(per), dtype=object)
        out[:] = per
        values: np.ndarray = out[self.codes["params"]]
        return values

    def take(self, rows: np.ndarray) -> Frame:
        """The rows selected by a boolean mask or an index array, labels shared. Each
        column is cut when first read: a reader of a few columns copies only those."""
        rows = np.asarray(rows)
        index = np.flatnonzero(rows) if rows.dtype == np.bool_ else rows.astype(np.int64)
        return Frame(
            _Rows.of(self.codes, index),
            self.labels,
            _Rows.of(self.numbers, index),
            self._params,
        )

    def key_column(self, name: str) -> tuple[np.ndarray, list[Any]]:
        """(an integer code per row, what each code stands for) of any field."""
        if name in self.codes:
            return self.codes[name].astype(np.int64), self.labels[name]
        if name not in self._keys:  # a number's distinct values
            x = self.numbers[name]
            if x.dtype.kind in "iu" and x.size and x.min() >= 0 and x.max() < 1 << 24:
                inverse, _ = _dense(x.astype(np.int64), int(x.max()) + 1)  # no sort
                uniq = np.flatnonzero(np.bincount(x, minlength=1))
            else:
                uniq, inverse = np.unique(x, return_inverse=True)
            self._keys[name] = (inverse.astype(np.int64), uniq.tolist())
        return self._keys[name]

    def groups(self, *names: str) -> list[tuple[tuple[Any, ...], np.ndarray]]:
        """(the fields' values, the rows' indices in order) per distinct combination of
        fields `names`, in the order each combination first appears."""
        if not len(self):
            return []
        combined = np.zeros(len(self), dtype=np.int64)
        meanings, span = [], 1
        for name in names:
            codes, means = self.key_column(name)
            combined = combined * max(1, len(means)) + codes
            span *= max(1, len(means))
            if span > max(len(self), 1 << 16):  # renumber: keeps the table of flags small
                combined, span = _dense(combined, span)
            meanings.append((codes, means))
        inverse, k = _dense(combined, span)
        n = len(self)
        first = np.empty(k, dtype=np.int64)
        first[inverse[::-1]] = np.arange(n - 1, -1, -1)  # the last write wins: the first row
        # a stable sort by group (radix for 16-bit keys), cut where each group ends
        order = np.argsort(inverse.astype(np.uint16) if k <= 1 << 16 else inverse, kind="stable")
        parts = np.split(order, np.cumsum(np.bincount(inverse, minlength=k))[:-1])
        out = []
        for g in np.argsort(first, kind="stable"):
            i = parts[g][0]
            out.append((tuple(means[int(codes[i])] for codes, means in meanings), parts[g]))
        return out

    def samples(self, rows: np.ndarray | None = None) -> list[Sample]:
        """The rows (all, or a mask or index array) as Sample records."""
        f = self if rows is None else self.take(rows)
        fields: dict[str, list[Any]] = {k: f.column(k).tolist() for k in TEXT if k != "params"}
        fields.update({k: v.tolist() for k, v in f.numbers.items()})
        fields["value"] = [None if v != v else v for v in fields["value"]]
        fields["params"] = [f.params_of(int(c)) for c in f.codes["params"]]
        out = []
        for row in zip(*(fields[n] for n in _SAMPLE_FIELDS), strict=True):
            # a frozen dataclass's __init__ sets each field through object.__setattr__
            # (1.6 times slower for the thousands of samples a report draws): the
            # fields are set as that would set them, each row's params its own dict
            s = object.__new__(Sample)
            s.__dict__.update(zip(_SAMPLE_FIELDS, row, strict=True))
            s.__dict__["params"] = dict(s.params)
            out.append(s)
        return out


_SAMPLE_FIELDS = tuple(f.name for f in dataclasses.fields(Sample))


def _dense(keys: np.ndarray, span: int) -> tuple[np.ndarray, int]:
    """(keys renumbered 0..k-1 in their order, k): by a table of `span` flags when that
    is small, else by sorting."""
    if span <= max(1 << 16, 4 * keys.size) and span <= 1 << 26:
        present = np.zeros(span, dtype=bool)
        present[keys] = True
        ids = np.cumsum(present) - 1
        return ids[keys], int(ids[-1]) + 1 if span else 0
    uniq, inverse = np.unique(keys, return_inverse=True)
    return inverse.astype(np.int64), int(uniq.size)


def _code_type(n: int) -> type:
    return np.uint8 if n <= 1 << 8 else np.uint16 if n <= 1 << 16 else np.int32


def as_frame(samples: Frame | Iterable[Sample]) -> Frame:
    """A frame as it is; Sample records made into one."""
    return samples if isinstance(samples, Frame) else Frame.from_samples(samples)


class _Rows(Mapping[str, np.ndarray]):
    """Some rows of a frame's columns, each column cut from the whole frame's when first
    read (and kept)."""

    def __init__(self, source: Mapping[str, np.ndarray], index: np.ndarray) -> None:
        self.source, self.index = source, index
        self._cut: dict[str, np.ndarray] = {}

    @classmethod
    def of(cls, columns: Mapping[str, np.ndarray], index: np.ndarray) -> _Rows:
        if isinstance(columns, _Rows):  # rows of rows: index the whole frame's columns
            return cls(columns.source, columns.index[index])
        return cls(columns, index)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._cut:
            self._cut[name] = self.source[name][self.index]
        return self._cut[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.source)

    def __len__(self) -> int:
        return len(self.source)

    def __contains__(self, name: object) -> bool:
        return name in self.source
