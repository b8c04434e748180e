"""Parquet read in windows of whole row groups: the footer's row groups as polars wrote them, every row once and in
order whatever the batch bounds, and a row group of long texts decoded a few times rather than once a batch."""

from __future__ import annotations

import itertools

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arena_cli.io.footer as footer
import arena_cli.io.readers as readers
from arena_cli.errors import InputError
from arena_cli.io.footer import RowGroup, row_groups
from arena_cli.io.readers import PARQUET_WINDOW_BATCHES, ROW, parquet_windows, read_parquet


def votes(rows: int, text: int = 3) -> pl.DataFrame:
    return pl.DataFrame({
        "id": [f"b{i}" for i in range(rows)],
        "model_a": [f"m{i % 3}" for i in range(rows)],
        "turn": list(range(rows)),
        "conversation_a": [[{"role": "user", "content": "q" * (i % 7)}, {"role": "assistant", "content": "a" * (text * (i % 11))}] for i in range(rows)],
        "meta": [{"tokens": i, "h": {"h1": i % 2}} for i in range(rows)],
    }, schema_overrides={"turn": pl.Int64})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(0, 300), group=st.integers(1, 120), batch_rows=st.integers(1, 200), batch_bytes=st.integers(1, 20_000),
       columns=st.sampled_from([None, ["id", "turn"], ["conversation_a"]]))
def test_every_row_once_in_order_from_windows_of_whole_row_groups(tmp_path, rows, group, batch_rows, batch_bytes, columns):
    path = tmp_path / "v.parquet"
    frame = votes(rows)
    frame.write_parquet(path, row_group_size=group)
    groups = row_groups(path)
    assert [g.rows for g in groups if g.rows] == [min(group, rows - at) for at in range(0, rows, group)]
    batches = list(read_parquet(path, batch_rows, columns, batch_bytes))
    assert all(0 < b.frame.height <= batch_rows for b in batches)
    read = pl.concat([b.frame for b in batches]) if batches else pl.DataFrame()
    assert read.get_column(ROW, default=pl.Series([], dtype=pl.Int64)).to_list() == list(range(1, rows + 1))
    if rows:
        assert read.drop(ROW).equals(frame.select(columns) if columns else frame)


@given(sizes=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 5_000)), max_size=12),
       batch_rows=st.integers(1, 60), batch_bytes=st.integers(1, 4_000))
def test_windows_cover_the_file_and_cut_only_row_groups_too_large(sizes, batch_rows, batch_bytes):
    groups = [RowGroup(rows, (("c", size),)) for rows, size in sizes]
    windows = parquet_windows(groups, None, batch_rows, batch_bytes)
    assert [start for start, _ in windows] == [sum(r for _, r in windows[:i]) for i in range(len(windows))]
    assert sum(r for _, r in windows) == sum(g.rows for g in groups)
    bounds = [sum(g.rows for g in groups[:i]) for i in range(len(groups) + 1)]
    most_rows, most_bytes = PARQUET_WINDOW_BATCHES * batch_rows, PARQUET_WINDOW_BATCHES * batch_bytes
    for start, rows in windows:
        assert rows > 0
        if start in bounds and start + rows in bounds:  # whole row groups: a batch's worth, or one group alone
            held = [g for g, at in zip(groups, bounds) if start <= at < start + rows and g.rows]
            assert len(held) == 1 or (rows <= batch_rows and sum(g.decoded_bytes(None) for g in held) <= batch_bytes)
            assert len(held) > 1 or rows == 1 or held[0].rows <= most_rows and held[0].decoded_bytes(None) <= most_bytes
        else:  # a slice of one row group too large for a window, as few as fit
            (cut,) = [g for g, at in zip(groups, bounds) if at <= start < at + g.rows]
            slices = max(-(-cut.rows // most_rows), -(-cut.decoded_bytes(None) // most_bytes))
            assert slices > 1 and rows == -(-cut.rows // slices) or start + rows in bounds


def test_a_row_group_of_long_texts_is_decoded_a_few_times_not_once_a_batch(tmp_path, monkeypatch):
    path = tmp_path / "v.parquet"
    votes(2_000, text=400).write_parquet(path, row_group_size=2_000)
    decoded: list[tuple[int, int]] = []
    real = readers.parquet_windows

    def windows(*args):
        decoded.extend(real(*args))
        return decoded

    monkeypatch.setattr(readers, "parquet_windows", windows)
    batches = list(read_parquet(path, batch_bytes=64 << 10))
    assert sum(b.frame.height for b in batches) == 2_000
    assert len(batches) >= 4 * len(decoded) > 0


@pytest.mark.parametrize("cut", [8, 100, 2_000])
def test_a_truncated_parquet_footer_is_an_input_error(tmp_path, cut):
    path = tmp_path / "v.parquet"
    votes(500).write_parquet(path, row_group_size=100)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - cut] + data[-8:] if cut > 8 else data[:-cut])
    with pytest.raises(InputError, match="parquet"):
        list(read_parquet(path))


@pytest.mark.parametrize("batch_rows, batch_bytes", [(7, 1 << 30), (1000, 2000), (1, 1)])
def test_a_footer_too_large_to_decode_reads_every_row_once_in_windows_of_rows(tmp_path, monkeypatch, batch_rows, batch_bytes):
    """A footer of more row groups than is worth decoding (here made so by a smaller limit): the file is read in
    windows of rows, every row once and in order, as from its row groups."""
    path = tmp_path / "v.parquet"
    votes(95).write_parquet(path, row_group_size=4)
    listed = list(read_parquet(path, batch_rows, None, batch_bytes))
    monkeypatch.setattr(footer, "MAX_FOOTER_BYTES", 64)
    assert row_groups(path) is None
    unlisted = list(read_parquet(path, batch_rows, None, batch_bytes))
    assert all(0 < b.frame.height <= batch_rows for b in unlisted)
    assert pl.concat([b.frame for b in unlisted]).equals(pl.concat([b.frame for b in listed]))
    assert pl.concat([b.frame for b in unlisted])[ROW].to_list() == list(range(1, 96))


@pytest.mark.parametrize(("rows", "group"), [(95, 4), (500, 100), (500, 1_000), (1, 1)])
def test_the_first_row_group_is_read_from_the_footer_start_as_the_whole_footer_lists_it(tmp_path, rows, group):
    path = tmp_path / "v.parquet"
    votes(rows).write_parquet(path, row_group_size=group)
    assert footer.first_row_group_rows(path) == row_groups(path)[0].rows == min(rows, group)


def test_the_first_row_group_of_a_footer_cut_short_is_an_error_and_of_no_group_none(tmp_path):
    path = tmp_path / "v.parquet"
    votes(0).write_parquet(path)
    assert footer.first_row_group_rows(path) in (None, 0)
    votes(500).write_parquet(path, row_group_size=100)
    data = path.read_bytes()
    start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    path.write_bytes(data[: start + 20] + (20).to_bytes(4, "little") + b"PAR1")  # the footer's first 20 bytes only
    with pytest.raises(ValueError):
        footer.first_row_group_rows(path)


@pytest.mark.parametrize(("data", "rows"), [
    (bytes([0x49, 0x1C, 0x3B, 0x01, 0x95, 0x15, 0x02, 0x02, 0x00, 0x00]), ValueError),  # num_rows a map with a list key
    (bytes([0x49, 0x1C, 0x31, 0x00, 0x00]), None),  # num_rows a boolean
    (bytes([0x15, 0x02, 0x19, 0xF3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00]), ValueError),  # a list of 2^35 elements
    (bytes([0x15, 0x02, 0x1B, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00]), ValueError),  # a map of 2^35 entries
])
def test_a_damaged_footer_gives_a_number_none_or_a_value_error_at_once(tmp_path, data, rows):
    path = tmp_path / "v.parquet"
    path.write_bytes(b"PAR1" + data + len(data).to_bytes(4, "little") + b"PAR1")
    if rows is ValueError:
        with pytest.raises(ValueError):
            footer.first_row_group_rows(path)
    else:
        assert footer.first_row_group_rows(path) == rows


@pytest.mark.parametrize(("rows", "group", "at_once"), [(300_000, 100_000, 2), (450_000, 112_500, 2), (210_000, 210_000, 2), (250_003, 100_001, 2), (1_000_000, 125_000, 1), (90, 90, 1)])
def test_slices_read_two_at_once_only_within_row_groups_of_a_struct_and_cut_none(tmp_path, rows, group, at_once):
    """A streamed read of a struct column reads two slices at once where its row groups hold a slice each at least,
    and then cuts each group in equal slices, none across two groups; a file of smaller groups, one at a time."""
    from arena_cli.io.lean import lean_parquet
    from arena_cli.io.options import InputOptions
    from arena_cli.io.streamed import slicing

    path = tmp_path / "v.parquet"
    counts = pl.int_range(rows, eager=True) % 1000
    pl.DataFrame({"model_a": "a", "model_b": "b", "winner": "tie", "n": counts}).select(
        "model_a", "model_b", "winner", pl.struct(sum_assistant_a_tokens="n", sum_assistant_b_tokens="n").alias("conv_metadata"),
    ).write_parquet(path, row_group_size=group)
    lean = lean_parquet(path, InputOptions(), ["model_a", "model_b", "outcome", "meta_tokens_a", "meta_tokens_b"])
    assert [g.rows for g in row_groups(path)][0] == group
    read_at_once, cuts = slicing(path, lean, rows)
    assert read_at_once == at_once
    assert [start for start, _ in cuts] == list(itertools.accumulate((length for _, length in cuts[:-1]), initial=0))  # every row once
    assert sum(length for _, length in cuts) == rows
    if at_once > 1:  # none across two groups, and each group's alike
        assert all(start // group == (start + length - 1) // group for start, length in cuts)
        assert len({length for _, length in cuts[: len(cuts) - 1]}) <= 2


@pytest.mark.parametrize(("group", "slices"), [(2_000, 2), (3_000, 2), (4_500, 3), (1_000, 2)])
def test_a_struct_row_group_is_cut_in_as_few_slices_as_bound_memory(tmp_path, monkeypatch, group, slices):
    """Polars decodes a struct's slice from within a row group at a cost that grows with the rows before it: each
    group is cut in the fewest equal slices of two thirds of SLICE_ROWS at most (two at least, one per thread), not
    in the quarter-file slices of other reads (seven of a 1M-row group, 1.8 times the CPU of one read)."""
    from arena_cli.io import streamed
    from arena_cli.io.lean import lean_parquet
    from arena_cli.io.options import InputOptions

    monkeypatch.setattr(streamed, "SLICE_ROWS", 3_000)
    monkeypatch.setattr(streamed, "MIN_SLICE_ROWS", 100)
    path = tmp_path / "v.parquet"
    rows = 2 * group
    counts = pl.int_range(rows, eager=True) % 1000
    pl.DataFrame({"model_a": "a", "model_b": "b", "winner": "tie", "n": counts}).select(
        "model_a", "model_b", "winner", pl.struct(sum_assistant_a_tokens="n", sum_assistant_b_tokens="n").alias("conv_metadata"),
    ).write_parquet(path, row_group_size=group)
    lean = lean_parquet(path, InputOptions(), ["model_a", "model_b", "outcome", "meta_tokens_a", "meta_tokens_b"])
    at_once, cuts = streamed.slicing(path, lean, rows)
    assert at_once == 2
    assert len(cuts) == 2 * slices
    assert max(length for _, length in cuts) <= 2_000
