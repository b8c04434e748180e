"""The lean read of a parquet log with ``conv_metadata`` (``io/lean.py``): it skips the struct in a plain fit, and
its per-row count checks in a style fit, only when no count can fail its check (polars answers from the writer's
statistics where they settle it)."""

from __future__ import annotations

import struct

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_cli.io.fields import MAX_COUNT
from arena_cli.io.lean import lean_parquet
from arena_cli.io.options import InputOptions
from arena_cli.io.reading import read_sources
from arena_cli.schema import META_COLUMNS

counts = st.lists(st.one_of(st.none(), st.integers(-3, 5), st.sampled_from([MAX_COUNT, MAX_COUNT + 1, -(2**63), 2**63 - 1, 2**64 - 1, 2**100])), min_size=1, max_size=30)


BOUNDS = {pl.Int64: (-(2**63), 2**63 - 1), pl.Int32: (-(2**31), 2**31 - 1), pl.UInt64: (0, 2**64 - 1), pl.UInt8: (0, 255), pl.Int8: (-128, 127),
          pl.Int128: (-(2**127), 2**127 - 1), pl.UInt128: (0, 2**128 - 1)}


@settings(max_examples=60, deadline=None)
@given(counts, st.sampled_from(list(BOUNDS)), st.integers(1, 7), st.booleans())
def test_counts_are_in_range_exactly_when_no_value_is_out_of_it(tmp_path_factory, values, dtype, group, statistics):
    """Any integer type, any row groups, with the writer's statistics or without: the counts are taken as in range
    exactly when every value is in [0, MAX_COUNT] (nulls aside); and a plain lean read then skips the struct and
    gives the battles and quarantine of a full read, as a style read does."""
    low, high = BOUNDS[dtype]
    fits = [v for v in values if v is None or low <= v <= high] or [None]
    path = tmp_path_factory.mktemp("f") / "v.parquet"
    n = len(fits)
    pl.DataFrame({
        "model_a": ["x", "y"] * n, "model_b": ["y", "z"] * n, "winner": ["model_a", "tie"] * n,
        "conv_metadata": pl.DataFrame({"t": pl.Series(fits * 2, dtype=dtype), "h": pl.Series([1] * 2 * n, dtype=pl.Int64)}).select(
            pl.struct(pl.col("t").alias("sum_assistant_b_tokens"), pl.struct(pl.col("h").alias("h2")).alias("header_count_a"))
        ).to_series(),
    }).write_parquet(path, row_group_size=group, statistics=statistics)
    plain = ["model_a", "model_b", "outcome"]
    expected = all(v is None or 0 <= v <= MAX_COUNT for v in fits)
    assert lean_parquet(path, InputOptions(), plain).counts_in_range == expected
    full = read_sources([path])
    for wanted in (plain, [*plain, *META_COLUMNS]):  # (a style read checks the counts it decodes instead)
        lean = read_sources([path], columns=wanted)
        assert lean.battles.equals(full.battles.select(wanted))
        assert lean.quarantine.select("source_row", "reason", "detail").equals(full.quarantine.select("source_row", "reason", "detail"))


def test_counts_that_are_not_integers_are_never_taken_as_in_range(tmp_path):
    path = tmp_path / "v.parquet"
    pl.DataFrame({"model_a": ["x"], "model_b": ["y"], "winner": ["tie"], "conv_metadata": [{"sum_assistant_a_tokens": 3.0}]}).write_parquet(path)
    for wanted in (["model_a", "model_b", "outcome"], ["model_a", "model_b", "outcome", *META_COLUMNS]):
        assert not lean_parquet(path, InputOptions(), wanted).counts_in_range


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


def test_a_style_read_checks_the_counts_as_they_decode(tmp_path):
    """A style read (the counts wanted) reads the struct and takes integer counts as in range, without asking the
    footer: in range, it gives a full read's battles; one count out of range, its row is quarantined as a full
    read quarantines it. Counts that are not integers are checked row by row."""
    style = ["model_a", "model_b", "outcome", *META_COLUMNS]
    good = _release(tmp_path / "good.parquet", [5, 7, 0, 9])
    assert lean_parquet(good, InputOptions(), style).counts_in_range
    assert read_sources([good], columns=style).battles.equals(read_sources([good]).battles.select(style))
    bad = _release(tmp_path / "bad.parquet", [5, 7, -1, 9])
    lean, full = read_sources([bad], columns=style), read_sources([bad])
    assert lean.quarantine["source_row"].to_list() == [3]
    assert lean.quarantine.select("source_row", "reason", "detail").equals(full.quarantine.select("source_row", "reason", "detail"))
    assert lean.battles.equals(full.battles.select(style))


def _with_a_value_damaged(path, value: int, damaged: int):
    """The log at ``path`` with the int64 ``value`` in its data page replaced by ``damaged``, its statistics (in
    the footer and the page header, which hold ``value`` too) left as they were: a damaged page under an intact
    footer. Each occurrence of the bytes is tried; the one the decoded counts show is the data."""
    data = path.read_bytes()
    old, new = struct.pack("<q", value), struct.pack("<q", damaged)
    at = data.find(old)
    while at >= 0:
        path.write_bytes(data[:at] + new + data[at + 8:])
        tokens = pl.read_parquet(path)["conv_metadata"].struct.field("sum_assistant_a_tokens")
        if damaged in tokens.to_list():
            return path
        at = data.find(old, at + 1)
    raise AssertionError("the value is not in the file")


def test_counts_whose_statistics_are_wrong_are_checked_as_they_decode(tmp_path):
    """The footer shows every count in range, but a page decodes to one out of range: a style read checks the
    values it decoded and quarantines that row, as a full read does (the fit gives the battles an ingest stores)."""
    style = ["model_a", "model_b", "outcome", *META_COLUMNS]
    path = tmp_path / "damaged.parquet"
    n = 400
    pl.DataFrame({
        "model_a": ["x", "y"] * (n // 2), "model_b": ["y", "z"] * (n // 2), "winner": ["model_a", "tie"] * (n // 2),
        "conv_metadata": [{"sum_assistant_a_tokens": 123_456_789 if i == 250 else i, "header_count_a": {"h1": 1}} for i in range(n)],
    }).write_parquet(path, compression="uncompressed", statistics=True)
    _with_a_value_damaged(path, 123_456_789, -5)
    assert lean_parquet(path, InputOptions(), ["model_a", "model_b", "outcome"]).counts_in_range  # the statistics still say so
    lean, full = read_sources([path], columns=style), read_sources([path])
    assert lean.quarantine["source_row"].to_list() == [251]
    assert lean.quarantine.select("source_row", "reason", "detail").equals(full.quarantine.select("source_row", "reason", "detail"))
    assert lean.battles.equals(full.battles.select(style))
