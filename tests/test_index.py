"""The duplicate index: sorted runs against a plain dict, and the store's saved index — used when it is whole,
completed when it lags the store, rebuilt when it names what the store no longer holds or cannot be trusted —
with the same duplicates and conflicts in every case."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arena_cli.io.index as index_module
from arena_cli.io.index import FOLDER, MANIFEST, BattleIndex, SortedRuns
from arena_cli.io.ingest import ingest_to_store
from arena_cli.io.store import Store

# Few first words, so that keys share one (a 64-bit hash collision) and repeat, across and within batches.
keys = st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 2**40))
batches = st.lists(st.lists(keys, max_size=12), min_size=1, max_size=12)


@pytest.mark.parametrize("combine", ["first", "sum", "set"])
@settings(max_examples=200, deadline=None)
@given(batches=batches, probes=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 4)), max_size=20))
def test_sorted_runs_answer_as_a_dict(combine, batches, probes):
    runs = SortedRuns("first" if combine == "set" else combine)
    model: dict[tuple[int, int], int] = {}
    for batch in batches:
        for first, second, value in batch:
            key = (first, 0) if combine == "set" else (first, second)
            model[key] = model.get(key, 0) + value if combine == "sum" else 0 if combine == "set" else model.get(key, value)
        words = np.array([k for k in batch], dtype=np.uint64).reshape(-1, 3).T
        runs.add(*words[:1 if combine == "set" else 3])
    asked = [(first, 0) if combine == "set" else (first, second) for first, second in probes] + list(model)
    firsts, seconds = (np.array([p[i] for p in asked], dtype=np.uint64) for i in (0, 1))
    found, values = runs.get(firsts) if combine == "set" else runs.get(firsts, seconds)
    assert found.tolist() == [p in model for p in asked]
    assert values.tolist() == [model.get(p, 0) for p in asked]
    sizes = [len(run) for run in runs.runs]
    assert all(older > newer for older, newer in zip(sizes, sizes[1:]))  # merged geometrically: few runs


def votes(path: Path, ids: range, tie: bool = False) -> Path:
    rows = [{"question_id": f"b{i}", "model_a": f"m{i % 3}", "model_b": f"m{(i + 1) % 3}", "winner": "tie" if tie else "model_a"} for i in ids]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def ingest(root: Path, source: Path) -> dict:
    (summary,) = ingest_to_store(Store.open(root, create=True), [source])
    return {"stored": summary.stored, "duplicates": summary.duplicates, "conflicts": summary.quarantined.get("conflicting_duplicate", 0)}


@pytest.fixture
def parts_read(monkeypatch):
    """The battles parts the index reads (those its saved form lacks)."""
    read: list[str] = []
    real = Store.read_part

    def read_part(store: Store, table: str, relative: str, columns: list[str]) -> pl.DataFrame:
        read.append(Path(relative).name)
        return real(store, table, relative, columns)

    monkeypatch.setattr(Store, "read_part", read_part)
    return read


def saved_runs(root: Path) -> set[str]:
    return {run["file"] for run in json.loads((root / FOLDER / MANIFEST).read_text())["runs"]}


def test_a_saved_index_is_used_and_no_part_is_read(tmp_path, parts_read):
    root = tmp_path / "store"
    assert ingest(root, votes(tmp_path / "a.jsonl", range(0, 50))) == {"stored": 50, "duplicates": 0, "conflicts": 0}
    assert ingest(root, votes(tmp_path / "b.jsonl", range(40, 90))) == {"stored": 40, "duplicates": 10, "conflicts": 0}
    assert ingest(root, votes(tmp_path / "c.jsonl", range(0, 90, 7), tie=True)) == {"stored": 0, "duplicates": 0, "conflicts": 13}
    assert parts_read == []
    assert {f.name for f in (root / FOLDER).iterdir()} == saved_runs(root) | {MANIFEST}  # runs merged away are gone


def test_what_a_run_killed_as_it_saved_the_index_left_goes_and_nothing_else(tmp_path):
    root = tmp_path / "store"
    ingest(root, votes(tmp_path / "a.jsonl", range(0, 50)))
    left = [".battles.json.x1y2.tmp", ".battles-0123456789abcdef.u64.x1y2.tmp", "battles-0123456789abcdef.u64"]
    for name in [*left, "notes.txt"]:
        (root / FOLDER / name).write_text("?")
    assert ingest(root, votes(tmp_path / "b.jsonl", range(40, 60))) == {"stored": 10, "duplicates": 10, "conflicts": 0}
    assert {f.name for f in (root / FOLDER).iterdir()} == saved_runs(root) | {MANIFEST, "notes.txt"}


def test_an_index_that_lags_the_store_reads_only_the_parts_it_lacks(tmp_path, parts_read, monkeypatch):
    """A run killed after it published its battles and before it saved the index."""
    root = tmp_path / "store"
    ingest(root, votes(tmp_path / "a.jsonl", range(0, 50)))
    with monkeypatch.context() as patch:
        patch.setattr(BattleIndex, "save", lambda *args: None)
        ingest(root, votes(tmp_path / "b.jsonl", range(50, 90)))
    lacking = [Path(p).name for p in Store.open(root).parts("battles")][1:]
    assert ingest(root, votes(tmp_path / "c.jsonl", range(30, 100))) == {"stored": 10, "duplicates": 60, "conflicts": 0}
    assert parts_read == lacking
    assert ingest(root, votes(tmp_path / "d.jsonl", range(0, 100))) == {"stored": 0, "duplicates": 100, "conflicts": 0}
    assert parts_read == lacking


def drop_index(root: Path) -> None:
    for file in (root / FOLDER).iterdir():
        file.unlink()
    (root / FOLDER).rmdir()


def name_a_part_no_longer_stored(root: Path) -> None:
    saved = json.loads((root / FOLDER / MANIFEST).read_text())
    saved["parts"]["battles/part-000001-00000000.parquet"] = 5
    (root / FOLDER / MANIFEST).write_text(json.dumps(saved))


def flip_a_word(root: Path) -> None:
    run = root / FOLDER / sorted(saved_runs(root))[0]
    data = bytearray(run.read_bytes())
    data[-1] ^= 1
    run.write_bytes(bytes(data))


def truncate_a_run(root: Path) -> None:
    run = root / FOLDER / sorted(saved_runs(root))[0]
    run.write_bytes(run.read_bytes()[:-8])


def other_polars(root: Path) -> None:
    saved = json.loads((root / FOLDER / MANIFEST).read_text())
    saved["hash"] = "polars 0.0.1"
    (root / FOLDER / MANIFEST).write_text(json.dumps(saved))


@pytest.mark.parametrize("damage", [drop_index, name_a_part_no_longer_stored, flip_a_word, truncate_a_run, other_polars,
                                    lambda root: (root / FOLDER / MANIFEST).write_text("{not json")])
def test_an_index_that_cannot_be_trusted_is_rebuilt_from_the_parts(tmp_path, parts_read, damage):
    root = tmp_path / "store"
    ingest(root, votes(tmp_path / "a.jsonl", range(0, 50)))
    ingest(root, votes(tmp_path / "b.jsonl", range(50, 90)))
    damage(root)
    assert ingest(root, votes(tmp_path / "c.jsonl", range(30, 100))) == {"stored": 10, "duplicates": 60, "conflicts": 0}
    assert sorted(parts_read) == sorted(Path(p).name for p in Store.open(root).parts("battles"))[:2]
    parts_read.clear()
    assert ingest(root, votes(tmp_path / "d.jsonl", range(0, 100), tie=True)) == {"stored": 0, "duplicates": 0, "conflicts": 100}
    assert parts_read == []  # saved again, whole


def test_ids_whose_first_hash_collides_are_told_apart(tmp_path, monkeypatch):
    """Every id given the same first word: the second word alone tells them apart, and no vote is lost."""
    def colliding(ids: pl.Series) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(len(ids), dtype=np.uint64), ids.hash(index_module.SEEDS[1]).to_numpy()

    monkeypatch.setattr(index_module, "id_words", colliding)
    root = tmp_path / "store"
    assert ingest(root, votes(tmp_path / "a.jsonl", range(0, 30))) == {"stored": 30, "duplicates": 0, "conflicts": 0}
    assert ingest(root, votes(tmp_path / "b.jsonl", range(20, 40))) == {"stored": 10, "duplicates": 10, "conflicts": 0}
    assert ingest(root, votes(tmp_path / "c.jsonl", range(35, 45), tie=True)) == {"stored": 5, "duplicates": 0, "conflicts": 5}
    assert Store.open(root).read("battles", ["battle_id"])["battle_id"].n_unique() == 45


def test_a_store_that_stores_nothing_gets_no_index(tmp_path):
    root = tmp_path / "store"
    (tmp_path / "junk.jsonl").write_text("{junk\n")
    ingest(root, tmp_path / "junk.jsonl")
    assert not (root / FOLDER).exists()
