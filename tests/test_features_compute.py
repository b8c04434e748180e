"""compute_features: per-battle features from texts, LMArena's conv_metadata when there are no texts, and a pure
function of its rows."""

from __future__ import annotations

import polars as pl
import pytest

from arena_cli.errors import EncodingUnavailableError, InputError
from arena_cli.features import compute
from arena_cli.features.compute import compute_features, features_schema
from arena_cli.features.markdown import count_markdown
from arena_cli.features.registry import FEATURE_NAMES, LMARENA_FEATURES, STRUCTURE_FEATURES, feature_columns
from arena_cli.features.tokenizer import load_encoding
from arena_cli.schema import CONVERSATION, META_COLUMNS


def conversation(*turns: str | None) -> list[dict]:
    """Alternating user / assistant messages: the assistant says ``turns``."""
    messages = []
    for i, text in enumerate(turns):
        messages += [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": text}]
    return messages


def battles(rows: list[dict]) -> pl.DataFrame:
    schema = {"battle_id": pl.String, "conversation_a": CONVERSATION, "conversation_b": CONVERSATION, **{c: pl.Int64 for c in META_COLUMNS}}
    return pl.DataFrame([{c: row.get(c) for c in schema} for row in rows], schema=schema)


ANSWER = "# Plan\n\n1. **first** step\n2. second\n\n```python\n# code\n```\n| a | b |\n|---|---|\nsee https://x.org 🚀\n"


def test_columns_follow_the_registry():
    result = compute_features(battles([{"battle_id": "x", "conversation_a": conversation(ANSWER), "conversation_b": conversation("hi")}]))
    assert result.columns == ["battle_id", *feature_columns(), "feature_source"]
    assert dict(result.schema) == features_schema()
    assert {c[:-2] for c in feature_columns()} == set(FEATURE_NAMES)


def test_features_of_a_text_battle():
    row = compute_features(battles([{"battle_id": "x", "conversation_a": conversation(ANSWER), "conversation_b": conversation("hi")}])).row(0, named=True)
    encoding = load_encoding("cl100k_base")
    assert row["tokens_a"] == len(encoding.encode_ordinary(ANSWER)) and row["tokens_b"] == 1
    assert (row["h1_a"], row["ordered_a"], row["bold_star_a"], row["unordered_a"]) == (1, 2, 1, 0)
    assert (row["code_blocks_a"], row["tables_a"], row["links_a"], row["emoji_a"]) == (1, 1, 1, 1)
    assert row["header_density_a"] == pytest.approx(1 / row["tokens_a"])
    assert row["list_density_a"] == pytest.approx(2 / row["tokens_a"])
    assert row["bold_density_a"] == pytest.approx(1 / row["tokens_a"])
    assert row["feature_source"] == "text"


def test_multi_turn_tokens_sum_over_turns_and_markdown_joins_them():
    turns = ["first answer -", "- second answer", None]
    result = compute_features(battles([{"battle_id": "x", "conversation_a": conversation(*turns), "conversation_b": conversation("b")}]), recipe="lmarena")
    encoding = load_encoding("cl100k_base")
    assert result["tokens_a"][0] == sum(len(encoding.encode_ordinary(t or "")) for t in turns)
    joined = "\n".join(t or "" for t in turns)
    assert result.select(f"{n}_a" for n in count_markdown([joined]).columns).row(0) == count_markdown([joined], "lmarena").row(0)


@pytest.mark.parametrize("recipe", ["default", "lmarena"])
def test_each_recipe_counts_the_raw_joined_text(recipe):
    """Regression: the recipes clean the same texts; neither may see the other's cleaning."""
    texts = ["Intro: ```\n    - code line\n```\n* item\n**bold**", "```\n# a\n```\n# a\n", "~~~\n- x\n"]
    frame = battles([{"battle_id": str(i), "conversation_a": conversation(t), "conversation_b": conversation(t[::-1])} for i, t in enumerate(texts)])
    result = compute_features(frame, recipe=recipe)
    for side, side_texts in (("a", texts), ("b", [t[::-1] for t in texts])):
        expected = count_markdown(side_texts, recipe)
        assert result.select(f"{n}_{side}" for n in expected.columns).rename(lambda c: c[:-2]).equals(expected)
    assert count_markdown(texts, "default")["unordered"].to_list() != count_markdown(texts, "lmarena")["unordered"].to_list()


def test_battles_without_texts_use_conv_metadata():
    meta = {f"meta_{n}_{s}": i + (10 if s == "b" else 0) for s in "ab" for i, n in enumerate(LMARENA_FEATURES)}
    frame = battles([
        {"battle_id": "text", "conversation_a": conversation("# a"), "conversation_b": conversation("b")},
        {"battle_id": "meta", **meta},
        {"battle_id": "none"},
        {"battle_id": "empty", "conversation_a": [], "conversation_b": conversation(None)},
    ])
    result = compute_features(frame)
    assert result["battle_id"].to_list() == ["text", "meta", "none", "empty"]
    assert result["feature_source"].to_list() == ["text", "conv_metadata", None, "text"]
    by_id = {row["battle_id"]: row for row in result.iter_rows(named=True)}
    assert all(by_id["meta"][f"{n}_{s}"] == meta[f"meta_{n}_{s}"] for s in "ab" for n in LMARENA_FEATURES)
    assert all(by_id["meta"][f"{n}_a"] is None for n in STRUCTURE_FEATURES)
    assert by_id["meta"]["header_density_b"] == pytest.approx(sum(meta[f"meta_h{k}_b"] for k in range(1, 7)) / meta["meta_tokens_b"])
    assert all(v is None for k, v in by_id["none"].items() if k != "battle_id")
    assert by_id["empty"]["tokens_a"] == 0 and by_id["empty"]["header_density_a"] == 0.0


def test_a_pure_function_of_its_rows(monkeypatch):
    texts = [ANSWER, "plain", "- a\n- b", "```\nunclosed", "**x**", ANSWER]  # a repeated text too
    frame = battles([
        {"battle_id": str(i), "conversation_a": conversation(texts[i % 6]), "conversation_b": conversation(texts[(i * 5) % 6] + str(i))}
        for i in range(50)
    ] + [{"battle_id": "meta", "meta_tokens_a": 5, "meta_tokens_b": 7}])
    whole = compute_features(frame)
    monkeypatch.setattr(compute, "BATCH_ROWS", 7)
    assert compute_features(frame, workers=1).equals(whole)
    assert pl.concat([compute_features(frame.slice(i, 13)) for i in range(0, frame.height, 13)]).equals(whole)


def test_no_encoding_needed_without_texts(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    only_meta = battles([{"battle_id": "m", "meta_tokens_a": 3, "meta_tokens_b": 4}])
    assert compute_features(only_meta, encoding="r50k_base")["tokens_b"].to_list() == [4]
    with pytest.raises(EncodingUnavailableError):
        compute_features(battles([{"battle_id": "t", "conversation_a": conversation("x")}]), encoding="r50k_base")


def test_frames_without_conversation_columns_and_empty_frames():
    result = compute_features(pl.DataFrame({"battle_id": ["a", "b", "c"]}))
    assert result["feature_source"].to_list() == [None, None, None]
    assert compute_features(battles([])).schema == features_schema()


def test_unknown_recipe():
    with pytest.raises(InputError, match="unknown recipe"):
        compute_features(battles([]), recipe="fastchat")


def test_a_subset_of_families_is_computed_with_what_it_needs():
    frame = battles([{"battle_id": "x", "conversation_a": conversation(ANSWER), "conversation_b": conversation("hi")},
                     {"battle_id": "meta", "meta_tokens_a": 5, "meta_h1_a": 1}])
    whole = compute_features(frame)
    densities = compute_features(frame, families=["densities"])  # from tokens and markdown, not output
    assert densities.columns == ["battle_id", *feature_columns(["header_density", "list_density", "bold_density"]), "feature_source"]
    assert densities.equals(whole.select(densities.columns))
    structure = compute_features(frame, families=["structure"])
    assert structure.equals(whole.select("battle_id", *feature_columns(STRUCTURE_FEATURES), "feature_source"))
    with pytest.raises(InputError, match="unknown feature families"):
        compute_features(frame, families=["hedging"])


def test_the_registry_is_checked():
    from arena_cli.features.registry import FAMILIES, Family, Feature, check_families

    assert check_families(FAMILIES) == FAMILIES
    tokens, _, _, densities = FAMILIES
    toy = Feature("toy", "a toy", "toy")
    for families in ((*FAMILIES, tokens), (densities, *FAMILIES[:3]), (*FAMILIES, Family("default", (toy,), tokens.compute)),
                     (*FAMILIES, Family("toy", (toy, tokens.features[0]), tokens.compute))):
        with pytest.raises(ValueError):
            check_families(families)


def test_a_family_must_return_one_row_per_answer(monkeypatch):
    from arena_cli.features import registry

    broken = registry.Family("broken", (registry.Feature("broken", "one row whatever the answers", "toy"),), lambda answers: pl.DataFrame({"broken": [1]}))
    monkeypatch.setattr(registry, "FAMILIES", (*registry.FAMILIES, broken))
    frame = battles([{"battle_id": str(i), "conversation_a": conversation("a"), "conversation_b": conversation("b")} for i in range(3)])
    with pytest.raises(RuntimeError, match="one row per answer"):
        compute_features(frame)


def test_the_registry_is_light_and_names_lmarenas_counts():
    import subprocess
    import sys

    from arena_cli.schema import META_COUNTS

    assert LMARENA_FEATURES == META_COUNTS
    code = "import sys, arena_cli.features.registry; print('polars' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
