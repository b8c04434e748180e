"""Parquet read in windows of whole row groups: the footer's row groups as polars wrote them, every row once and in
order whatever the batch bounds, and a row group of long texts decoded a few times rather than once a batch."""

from __future__ import annotations


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


@pytest.mark.parametrize("data", [
    bytes([0x49, 0x1C, 0x3B, 0x01, 0x95, 0x15, 0x02, 0x02, 0x00, 0x00]),  # num_rows a map with a list key
    bytes([0x49, 0x1C, 0x31, 0x00, 0x00]),  # num_rows a boolean
    bytes([0x15, 0x02, 0x19, 0xF3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00]),  # a list of 2^35 elements
    bytes([0x15, 0x02, 0x1B, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00]),  # a map of 2^35 entries
])
def test_a_damaged_footer_gives_a_value_error_at_once(tmp_path, data):
    path = tmp_path / "v.parquet"
    path.write_bytes(b"PAR1" + data + len(data).to_bytes(4, "little") + b"PAR1")
    with pytest.raises(ValueError):
        row_groups(path)
