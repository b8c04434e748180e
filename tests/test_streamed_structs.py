"""Streamed reads of parquet logs with a struct of counts (LMArena's ``conv_metadata``): pyarrow decodes the struct,
polars the other columns. The battles, quarantine and counts are those of polars' own read of the whole file,
whatever the struct's nulls, the file's writer, its row groups and the slices it is read in."""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena_cli.io import streamed
from arena_cli.io.reading import read_sources

COUNT = pl.Int64()
META = pl.Struct({
    "sum_assistant_a_tokens": COUNT, "sum_assistant_b_tokens": pl.Int32(),
    "header_count_a": pl.Struct({"h1": COUNT, "h2": COUNT}), "bold_count_b": pl.Struct({"**": COUNT, "__": COUNT}),
    "turns": pl.Int32(),
})
COLUMNS = ["model_a", "model_b", "outcome", "meta_tokens_a", "meta_tokens_b", "meta_h1_a", "meta_h2_a", "meta_bold_star_b"]

counts = st.one_of(st.none(), st.integers(0, 40), st.sampled_from([-1, 2**40]))  # out of range: the row is rejected
metas = st.one_of(st.none(), st.fixed_dictionaries({
    "sum_assistant_a_tokens": counts, "sum_assistant_b_tokens": st.one_of(st.none(), st.integers(0, 40)),
    "header_count_a": st.one_of(st.none(), st.fixed_dictionaries({"h1": counts, "h2": counts})),
    "bold_count_b": st.one_of(st.none(), st.fixed_dictionaries({"**": counts, "__": counts})),
    "turns": st.one_of(st.none(), st.integers(1, 3)),
}))


def _log(path, metas, writer, group, dictionary=True):
    """A log as tools write it (trimmed names, known labels, unique ids) with ``metas`` as its ``conv_metadata``."""
    n = len(metas)
    frame = pl.DataFrame({
        "id": [f"p{i}" for i in range(n)], "model_a": ["x", "y", "z"] * (n // 3) + ["x", "y"][: n % 3],
        "model_b": ["y", "z", "x"] * (n // 3) + ["y", "z"][: n % 3], "winner": ["model_a", "model_b", "tie", "tie (bothbad)"] * (n // 4) + ["tie"] * (n % 4),
        "conv_metadata": pl.Series(metas, dtype=META),
    })
    if writer == "polars":
        frame.write_parquet(path, row_group_size=group)
    else:
        pq.write_table(frame.to_arrow(), path, row_group_size=group, use_dictionary=dictionary, compression="snappy")
    return path


def _read(path, **kwargs):
    result = read_sources([path], columns=COLUMNS, **kwargs)
    return result.battles, result.quarantine, [(s.rows_read, s.stored, s.quarantined) for s in result.summaries]


def _arrow_slices(monkeypatch) -> list[bool]:
    """Records, for each slice read, whether pyarrow decoded its struct."""
    taken: list[bool] = []
    slice_of = streamed._ArrowStructs.slice
    monkeypatch.setattr(streamed._ArrowStructs, "slice", lambda self, *a: taken.append((got := slice_of(self, *a)) is not None) or got)
    return taken


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(metas=st.lists(metas, min_size=1, max_size=30), writer=st.sampled_from(["polars", "pyarrow", "pyarrow-plain"]),
       group=st.integers(1, 12), slice_rows=st.integers(1, 12))
def test_the_struct_pyarrow_decodes_reads_as_polars_reads_it(tmp_path, metas, writer, group, slice_rows):
    path = _log(tmp_path / "v.parquet", metas, writer.split("-")[0], group, dictionary=writer == "pyarrow")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streamed, "SLICE_ROWS", slice_rows)
        patch.setattr(streamed, "MIN_SLICE_ROWS", 1)
        taken = _arrow_slices(patch)
        arrow = _read(path)
        assert taken and all(taken)
        patch.setattr(streamed._ArrowStructs, "of", classmethod(lambda cls, *a: None))
        polars_only = _read(path)
    assert arrow[0].equals(polars_only[0])
    assert arrow[1].equals(polars_only[1])
    assert arrow[2] == polars_only[2]


def test_a_nested_release_file_is_read_with_the_struct_decoded_by_pyarrow(tmp_path, monkeypatch):
    """The shape of LMArena's releases (as the hub writes them: row groups of 1,000 votes, dictionary-encoded), in
    slices across row groups: every slice's struct is pyarrow's, and its battles are polars' read's."""
    metas = [{"sum_assistant_a_tokens": i % 97, "sum_assistant_b_tokens": i % 89, "header_count_a": {"h1": i % 3, "h2": 0},
              "bold_count_b": {"**": i % 5, "__": 0}, "turns": 1} for i in range(5_000)]
    path = _log(tmp_path / "release.parquet", metas, "pyarrow", 1_000)
    monkeypatch.setattr(streamed, "MIN_SLICE_ROWS", 1)
    taken = _arrow_slices(monkeypatch)
    battles, quarantine, summaries = _read(path)
    assert taken == [True] * 4  # (slices of 1,250 votes)
    assert summaries == [(5_000, 5_000, {})]
    assert battles["meta_tokens_a"].to_list() == [i % 97 for i in range(5_000)]
    assert battles["meta_bold_star_b"].to_list() == [i % 5 for i in range(5_000)]


def test_when_pyarrow_fails_mid_file_polars_reads_the_rest(tmp_path, monkeypatch):
    """A read pyarrow stops (damage it finds, a type it gives otherwise than polars) is taken up by polars, from the
    slice it stopped at: the same battles as polars' read, and no error of pyarrow's."""
    metas = [{"sum_assistant_a_tokens": i, "sum_assistant_b_tokens": 1, "header_count_a": None, "bold_count_b": {"**": 1, "__": i % 2},
              "turns": None} for i in range(40)]
    path = _log(tmp_path / "v.parquet", metas, "pyarrow", 8)
    monkeypatch.setattr(streamed, "SLICE_ROWS", 10)
    monkeypatch.setattr(streamed, "MIN_SLICE_ROWS", 1)
    batches = pq.ParquetFile.iter_batches

    def failing(self, *args, **kwargs):
        for number, batch in enumerate(batches(self, *args, **kwargs)):
            if number == 2:
                raise pa.ArrowInvalid("damaged page")
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", failing)
    taken = _arrow_slices(monkeypatch)
    read = _read(path)
    assert taken == [True, True, False, False]
    monkeypatch.setattr(streamed._ArrowStructs, "of", classmethod(lambda cls, *a: None))
    expected = _read(path)
    assert read[0].equals(expected[0]) and read[2] == expected[2] == [(40, 40, {})]


@pytest.mark.parametrize("leaf", [pa.decimal32(9, 0), pa.decimal64(18, 0), pa.decimal128(18, 0)])
def test_a_struct_of_decimals_is_read_by_polars(tmp_path, monkeypatch, leaf):
    """Polars misreads pyarrow's 32- and 64-bit decimals in a struct (other values, or a panic): a struct of
    anything but integers and floats is read by polars, as it was before pyarrow decoded structs."""
    import decimal

    n = 30
    counts = lambda k: pa.array([decimal.Decimal((i * k) % 7) for i in range(n)], leaf)  # noqa: E731
    meta = pa.StructArray.from_arrays(
        [counts(1), counts(2), pa.StructArray.from_arrays([counts(3), counts(1)], names=["h1", "h2"])],
        names=["sum_assistant_a_tokens", "sum_assistant_b_tokens", "header_count_a"],
    )
    path = tmp_path / "decimals.parquet"
    pq.write_table(pa.table({"model_a": ["x", "y", "z"] * 10, "model_b": ["y", "z", "x"] * 10, "winner": ["model_a", "tie", "model_b"] * 10,
                             "conv_metadata": meta}), path)
    columns = ["model_a", "model_b", "outcome", "meta_tokens_a", "meta_h1_a"]
    taken = _arrow_slices(monkeypatch)
    read = read_sources([path], columns=columns)
    assert taken == [False]
    assert read.battles["meta_tokens_a"].to_list() == [i % 7 for i in range(n)]
    assert read.battles["meta_h1_a"].to_list() == [(3 * i) % 7 for i in range(n)]


@pytest.mark.parametrize("command", [["fit", "--style", "both", "--ci", "none"], ["ingest", "--store", "STORE"]])
def test_a_damaged_struct_page_is_one_line_of_error_whatever_polars_writes_when_it_panics(tmp_path, command):
    """Polars panics on this file's damaged ``conv_metadata`` pages, writing the panic's message and backtrace
    (``RUST_BACKTRACE=1``) to stderr before raising it: the command line keeps them out of its one-line error."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    damaged = Path(__file__).resolve().parent / "fixtures" / "parquet" / "damaged-struct-page.parquet"
    args = [str(tmp_path / "store") if arg == "STORE" else arg for arg in command]
    done = subprocess.run([sys.executable, "-m", "arena_cli", args[0], str(damaged), *args[1:]], capture_output=True, text=True,
                          env={**os.environ, "RUST_BACKTRACE": "1"}, timeout=120)
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ") and "corrupt or truncated parquet" in done.stderr
