"""Parity with published numbers, at 100%: arena-hard-auto's markdown metadata and cl100k token lengths, the
LLMFAO reference features (LMArena's recipe, computed independently), and the simulator's own counts."""

from __future__ import annotations

import json

import polars as pl
import pytest
from conftest import shared_path

from arena_cli.features import compute_features
from arena_cli.features.markdown import count_markdown
from arena_cli.features.registry import LMARENA_FEATURES
from arena_cli.features.tokenizer import count_tokens, load_encoding


def read_jsonl(path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_lmarena_counts_equal_arena_hard_v2_metadata():
    rows = read_jsonl(shared_path("data", "arena-hard", "v2.0-o3-mini-2025-01-31.jsonl"))
    assert len(rows) == 750
    answers = [row["messages"][-1]["content"]["answer"] for row in rows]
    ours = count_markdown(answers, "lmarena")
    meta = [row["metadata"] for row in rows]
    expected = pl.DataFrame({
        **{f"h{k}": [m["header_count"][f"h{k}"] for m in meta] for k in range(1, 7)},
        "ordered": [m["list_count"]["ordered"] for m in meta],
        "unordered": [m["list_count"]["unordered"] for m in meta],
        "bold_star": [m["bold_count"]["**"] for m in meta],
        "bold_underscore": [m["bold_count"]["__"] for m in meta],
    }).cast(pl.Int64)
    assert ours.equals(expected.select(ours.columns))
    assert expected.sum().row(0) != (0,) * expected.width  # the file does exercise the counters


def test_cl100k_token_counts_equal_arena_hard_v01_token_len():
    rows = read_jsonl(shared_path("data", "arena-hard", "v0.1-gpt-4-0314.jsonl"))
    assert len(rows) == 500
    turns = [row["choices"][0]["turns"][0] for row in rows]
    assert count_tokens([t["content"] for t in turns], load_encoding("cl100k_base")) == [t["token_len"] for t in turns]


def assert_equals_llmfao_reference(battles: pl.DataFrame) -> None:
    reference = pl.read_csv(shared_path("reference", "llmfao", "features.csv")).rename({"question_id": "battle_id"})
    assert battles.height == reference.height == 8931
    ours = compute_features(battles, recipe="lmarena")
    assert (ours["feature_source"] == "text").all()
    joined = reference.join(ours, on="battle_id", how="left", suffix="_ours")
    columns = [c for c in reference.columns if c != "battle_id"]
    assert set(columns) == {f"{n}_{s}" for s in "ab" for n in LMARENA_FEATURES}
    mismatches = {c: int((joined[c] != joined[f"{c}_ours"]).fill_null(True).sum()) for c in columns}
    assert mismatches == dict.fromkeys(columns, 0)


def test_llmfao_features_equal_the_reference():
    battles = pl.read_ndjson(shared_path("data", "llmfao", "battles.jsonl")).rename({"question_id": "battle_id"})
    assert_equals_llmfao_reference(battles)


def test_llmfao_features_equal_the_reference_after_ingest():
    from arena_cli.io.ingest import read_sources

    assert_equals_llmfao_reference(read_sources([shared_path("data", "llmfao", "battles.jsonl")]).battles)


@pytest.mark.parametrize("recipe", ["default", "lmarena"])
def test_counts_equal_the_simulators_own(recipe):
    from arena_cli.simulate import simulate

    simulation = simulate(n_battles=400, seed=11)
    battles = simulation.battles.rename({"question_id": "battle_id"})
    assert (battles["conversation_a"].list.len() > 2).any()  # multi-turn battles: tokens sum over turns
    ours = compute_features(battles, recipe=recipe)
    expected = simulation.features()
    columns = [f"{n}_{s}" for s in "ab" for n in LMARENA_FEATURES]
    assert ours.select(columns).equals(expected.select(columns).cast(pl.Int64))
