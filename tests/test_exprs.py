"""Shared polars expressions."""

from __future__ import annotations

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from arena_cli.exprs import FEW_KEYS, lookup

labels = st.one_of(st.none(), st.sampled_from(["a", "b", "tie", "x y", ""]), st.text(max_size=4))


@given(
    st.lists(labels, max_size=40),
    st.dictionaries(labels, st.integers(-100, 100), max_size=2 * FEW_KEYS + 3),
    st.integers(-100, 100),
)
def test_lookup_maps_like_a_dictionary(values, mapping, default):
    """Both ways (comparisons for a few keys, hashing for many) give mapping.get(value, default); a None key maps nulls."""
    got = pl.DataFrame({"v": values}, schema={"v": pl.String}).select(lookup(pl.col("v"), mapping, default, pl.Int64)).to_series().to_list()
    assert got == [mapping.get(v, default) for v in values]


@given(
    st.lists(labels, max_size=40),
    st.dictionaries(labels, st.one_of(st.none(), st.text(max_size=6)), max_size=2 * FEW_KEYS + 3),
    st.one_of(st.none(), st.text(max_size=6)),
)
def test_lookup_to_text_maps_like_a_dictionary(values, mapping, default):
    """Text values (taken by each row's place among the keys) too, lazily and in a frame of other columns."""
    frame = pl.LazyFrame({"v": values, "n": range(len(values))}, schema={"v": pl.String, "n": pl.Int64})
    got = frame.select("n", lookup(pl.col("v"), mapping, default, pl.String()).alias("mapped")).collect()
    assert got["mapped"].to_list() == [mapping.get(v, default) for v in values]
    assert got["n"].to_list() == list(range(len(values)))
