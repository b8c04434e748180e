"""Polars expressions shared by the ingest, the fit and the outputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

#: Up to this many keys, :func:`lookup` compares with literals instead of hashing every row.
FEW_KEYS = 16


def lookup(expr: pl.Expr, mapping: Mapping[Any, Any], default: Any, dtype: pl.DataType) -> pl.Expr:
    """``mapping[value]`` per row, ``default`` for values it lacks; a ``None`` key maps nulls.

    Why: columns such as winner labels hold a handful of distinct values, and comparing every row with a
    few short literals is several times faster than a hash lookup per row (``replace_strict``).
    """
    if len(mapping) > FEW_KEYS:
        present = {k: v for k, v in mapping.items() if k is not None}
        hashed = expr.replace_strict(list(present), list(present.values()), default=pl.lit(default, dtype), return_dtype=dtype)
        return pl.when(expr.is_null()).then(pl.lit(mapping.get(None, default), dtype)).otherwise(hashed)
    if dtype.is_numeric():
        result = pl.when(expr.is_null()).then(pl.lit(default, dtype)).otherwise(pl.lit(default, dtype))  # one per row, not a scalar
        for key, value in mapping.items():
            result = pl.when(expr.is_null() if key is None else expr == key).then(pl.lit(value, dtype)).otherwise(result)
        return result
    # text (or other) values: each row's place among the keys, then its value taken from them (choosing between
    # texts row by row copies every one of them: two to three times slower)
    place = pl.lit(len(mapping), pl.UInt32)
    for number, key in enumerate(mapping):
        place = pl.when(expr.is_null() if key is None else expr == key).then(pl.lit(number, pl.UInt32)).otherwise(place)
    return pl.lit(pl.Series([*mapping.values(), default], dtype=dtype)).gather(place)


def unsigned_zero(value: pl.Expr) -> pl.Expr:
    """``value`` with -0.0 as 0.0: a zero's sign (a weight of -0.0, a tiny negative difference rounded) is no
    number a reader needs, and outputs show 0.0 alone. :func:`unsigned_zero_text` is the same for a number
    written out."""
    return pl.when(value == 0).then(0.0).otherwise(value)


def unsigned_zero_text(number: str) -> str:
    """A number written out (``-0.000``, ``-0``) as :func:`unsigned_zero` gives it: a zero without its sign."""
    return number.removeprefix("-") if float(number) == 0 else number
