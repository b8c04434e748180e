"""Parquet footer statistics (``io/footer.py``): the ranges polars' writer records, decoded without polars, and
the lean read that skips ``conv_metadata`` only when they show no count can fail its check."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_cli.io.footer import LeafRange, integer_ranges
from arena_cli.io.lean import lean_parquet
from arena_cli.io.options import InputOptions
from arena_cli.io.reading import read_sources
from arena_cli.schema import META_COLUMNS

values = st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(values, values.map(lambda v: [None if x is None else x % 2**31 for x in v]), st.integers(1, 7))
def test_ranges_are_the_columns_min_and_max(tmp_path_factory, big, small, group):
    """Every integer leaf, top-level or in a struct, over any number of row groups: the range is polars' min and
    max of the column; a leaf of nulls only has none."""
    n = min(len(big), len(small))
    frame = pl.DataFrame({"big": pl.Series(big[:n], dtype=pl.Int64), "small": pl.Series(small[:n], dtype=pl.Int32)})
    frame = frame.with_columns(pl.struct(pl.col("big"), pl.struct(pl.col("small").alias("leaf")).alias("inner")).alias("nested"))
    path = tmp_path_factory.mktemp("f") / "v.parquet"
    frame.write_parquet(path, row_group_size=group, statistics=True)
    ranges = integer_ranges(path)
    for leaf, column in (((("big",)), "big"), (("small",), "small"), (("nested", "big"), "big"), (("nested", "inner", "leaf"), "small")):
        present = frame[column].drop_nulls()
        if present.len() and frame[column].null_count() == 0:
            assert ranges[leaf] == LeafRange(present.min(), present.max())
        elif leaf in ranges:  # groups of nulls only have no statistics: such a leaf is unsettled
            assert ranges[leaf] == LeafRange(present.min(), present.max())


@pytest.mark.parametrize("damage", ["truncated", "not parquet", "footer length", "garbage footer", "no statistics"])
def test_an_unreadable_footer_settles_nothing(tmp_path, damage):
    path = tmp_path / "v.parquet"
    pl.DataFrame({"x": [1, 2, 3]}).write_parquet(path, statistics=damage != "no statistics")
    data = path.read_bytes()
    changed = {
        "truncated": data[: len(data) // 2],
        "not parquet": b"hello world, not a parquet file at all",
        "footer length": data[:-8] + (2**31).to_bytes(4, "little") + b"PAR1",
        "garbage footer": data[: len(data) - 8 - 40] + bytes(range(200, 240)) + data[-8:],
        "no statistics": data,
    }[damage]
    path.write_bytes(changed)
    assert integer_ranges(path) == {}


def test_unsigned_values_past_the_signed_range_are_never_taken_as_in_range(tmp_path):
    path = tmp_path / "v.parquet"
    meta = pl.DataFrame({"m": [1, 2**63 + 5]}, schema={"m": pl.UInt64}).select(pl.struct(pl.col("m").alias("sum_assistant_a_tokens")).alias("conv_metadata"))
    pl.concat([pl.DataFrame({"model_a": ["x", "y"], "model_b": ["y", "x"], "winner": ["model_a", "tie"]}), meta], how="horizontal").write_parquet(path)
    lean = lean_parquet(path, InputOptions(), ["model_a", "model_b", "outcome"])
    assert "conv_metadata" in lean.plan.columns
    result = read_sources([path], columns=["model_a", "model_b", "outcome"])
    assert result.quarantine["reason"].to_list() == ["wrong_type"]


def _release(path, tokens):
    """A log with LMArena's nested conv_metadata whose token counts are ``tokens``."""
    n = len(tokens)
    pl.DataFrame({
        "model_a": ["x", "y"] * (n // 2), "model_b": ["y", "z"] * (n // 2), "winner": ["model_a", "tie"] * (n // 2),
        "conv_metadata": [{"sum_assistant_a_tokens": t, "header_count_a": {"h1": 1, "h2": 0}, "sum_user_tokens": -4} for t in tokens],
    }).write_parquet(path, row_group_size=2)
    return path


def test_conv_metadata_is_read_for_a_plain_fit_only_when_a_count_could_fail(tmp_path):
    """In range everywhere (a field no check reads may be anything): a plain read skips the struct, a style read
    keeps it. A count out of range in one row group: the struct is read and the row quarantined, as ingest does."""
    plain = ["model_a", "model_b", "outcome"]
    good = _release(tmp_path / "good.parquet", [5, 7, 0, 9])
    assert "conv_metadata" not in lean_parquet(good, InputOptions(), plain).plan.columns
    assert "conv_metadata" in lean_parquet(good, InputOptions(), [*plain, *META_COLUMNS]).plan.columns
    assert read_sources([good], columns=plain).battles.equals(read_sources([good]).battles.select(plain))
    bad = _release(tmp_path / "bad.parquet", [5, 7, -1, 9])
    assert "conv_metadata" in lean_parquet(bad, InputOptions(), plain).plan.columns
    lean, full = read_sources([bad], columns=plain), read_sources([bad])
    assert lean.quarantine.select("source_row", "reason", "detail").equals(full.quarantine.select("source_row", "reason", "detail"))
    assert lean.quarantine["source_row"].to_list() == [3]
