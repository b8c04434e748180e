"""A style fit from files reads each file without its texts when every battle has its per-side counts, and its
texts once when the counts come from them."""

from __future__ import annotations

import polars as pl
import pytest

from arena_cli.features.registry import STYLE_GROUPS, VARIANTS, side_columns
from arena_cli.io import reading
from arena_cli.io.options import InputOptions, Source
from arena_cli.models.design import Encoder
from arena_cli.models.inputs import load_encoded_battles
from arena_cli.models.options import FitOptions

BOTH = FitOptions(style="both")
COUNTS = [c for group in VARIANTS["both"] for f in STYLE_GROUPS[group] for c in side_columns(f)]


def _votes(rows: int = 300) -> pl.DataFrame:
    def turns(text: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": "q"}, {"role": "assistant", "content": text}]

    return pl.DataFrame({
        "model_a": ["abcd"[i % 4] for i in range(rows)],
        "model_b": ["bcda"[i % 4] for i in range(rows)],
        "winner": [("model_a", "model_b", "tie")[i % 3] for i in range(rows)],
        "conversation_a": [turns("word " * (i % 30)) for i in range(rows)],
        "conversation_b": [turns("# h\n" * (i % 5) + "- x\n" * (i % 3) + "**b** " * (i % 2)) for i in range(rows)],
    })


def _with_counts(votes: pl.DataFrame, gap_at: int | None = None) -> pl.DataFrame:
    counts = {c: pl.int_range(pl.len()) % 7 + len(c) for c in COUNTS}  # not what the texts give
    frame = votes.with_columns(**counts)
    if gap_at is not None:
        frame = frame.with_columns(pl.when(pl.int_range(pl.len()) == gap_at).then(None).otherwise(pl.col("tokens_b")).alias("tokens_b"))
    return frame


def _computed(path, options: InputOptions = InputOptions()) -> pl.DataFrame:
    """What the fit encodes when every battle's counts come from its texts: read whole, then computed."""
    from arena_cli.features import attach_features
    from arena_cli.io.battles import load_battles

    battles = load_battles(Source((path,), input=options), None, ["model_a", "model_b", "outcome", "conversation_a", "conversation_b"]).battles
    keyed = battles.with_columns(pl.int_range(pl.len()).cast(pl.String).alias("battle_id"))
    return Encoder(BOTH)(attach_features(keyed).drop("battle_id"))


def _unweighted(encoded: pl.DataFrame) -> pl.DataFrame:
    """Encoded battles of a log without weights as a lean read encodes them: without a column of ones."""
    if "_weight" not in encoded.columns:
        return encoded
    assert (encoded["_weight"] == 1.0).all()
    return encoded.drop("_weight")


def _encoded(path, monkeypatch, options: InputOptions = InputOptions()) -> tuple[pl.DataFrame, list[tuple[str, int | None]]]:
    """The encoded battles, and the reads of ``path``: (how, batches taken), a streamed read of narrow parquet
    columns (``streamed``, no texts: it takes slices, not batches) or a read of batches (``batches``)."""
    from arena_cli.io import streamed

    reads: list[list] = []
    read_batches, read_file = reading.read_batches, streamed._read_file

    def counted_batches(at, *a, **k):
        read = ["batches", 0]
        reads.append(read)
        for batch in read_batches(at, *a, **k):
            read[1] += 1
            yield batch

    def counted_file(at, lean, *a):
        reads.append(["streamed", None])
        assert not {"conversation_a", "conversation_b"} & set(lean.columns)
        return read_file(at, lean, *a)

    monkeypatch.setattr(reading, "read_batches", counted_batches)
    monkeypatch.setattr(streamed, "_read_file", counted_file)
    loaded = load_encoded_battles(Source((path,), input=options), None, BOTH)
    return pl.concat([part.lazy().collect() for part in loaded.battles.parts]), [tuple(read) for read in reads]


def test_a_parquet_file_of_texts_has_its_texts_read_once_and_its_counts_computed(tmp_path, monkeypatch):
    """Read first without the texts, as a log of counts is, until the first slice shows no counts."""
    path = tmp_path / "texts.parquet"
    _votes().write_parquet(path)
    encoded, reads = _encoded(path, monkeypatch)
    assert reads == [("streamed", None), ("batches", 1)]
    assert _unweighted(encoded).equals(_unweighted(_computed(path)))


def test_a_parquet_file_with_its_counts_is_read_once_without_its_texts_and_they_are_used(tmp_path, monkeypatch):
    path = tmp_path / "counts.parquet"
    frame = _with_counts(_votes())
    frame.write_parquet(path)
    encoded, reads = _encoded(path, monkeypatch)
    assert reads == [("streamed", None)]
    assert _unweighted(encoded).equals(_unweighted(Encoder(BOTH)(frame.rename({"winner": "outcome"}).with_columns(weight=1.0))))


@pytest.mark.parametrize("gap_at, batches_before", [(10, 1), (250, 3)])
def test_a_gap_in_the_counts_makes_every_battle_count_from_its_texts(tmp_path, monkeypatch, gap_at, batches_before):
    """As for a store: one battle without counts, and all are computed. The read without texts stops at the
    batch with the gap (having parsed the next one meanwhile, if there is one); the file is then read once more,
    every battle counted from its texts."""
    from arena_cli.io.results import ReadPath

    path = tmp_path / "gap.jsonl"
    _with_counts(_votes(), gap_at).write_ndjson(path)
    options = InputOptions(batch_rows=100)
    monkeypatch.setattr(reading, "read_json_streamed", lambda *a: ReadPath.LEAN)  # batches of 100 rows (a streamed read takes blocks of bytes)
    encoded, reads = _encoded(path, monkeypatch, options)
    assert reads == [("batches", min(batches_before + 1, 3)), ("batches", 3)]
    assert _unweighted(encoded).equals(_unweighted(_computed(path, options)))
