"""LLM-judge logs: arena-hard-auto judgments and AlpacaEval annotations read as votes, the judges' diagnostics.

Round trips: logs written here in the upstream shapes from known strengths give the leaderboard a plain polars
conversion of the same files gives (games exploded, strong verdicts weighted; preferences split), and the truth's
order. Real excerpts (tests/fixtures, see its README) check the readers take the real shapes. Hostile records are
quarantined with a reason, or the command exits 3, never with a traceback.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import arena_cli as arena
from arena_cli.cli import app
from arena_cli.io.judged import VERDICTS, source_files
from arena_cli.io.options import InputOptions
from arena_cli.io.reading import read_sources
from arena_cli.judge_diagnostics import position_consistency

FIXTURES = Path(__file__).resolve().parent / "fixtures"
AH_FIXTURE = FIXTURES / "arena-hard"
AE_FIXTURE = FIXTURES / "alpaca-eval"
ARENA_HARD = InputOptions(fmt="arena-hard")
ALPACA_EVAL = InputOptions(fmt="alpaca-eval")
BASELINE = "o3-mini-2025-01-31"
TRUTH = {"model-a": 0.9, "model-b": 0.3, "model-c": -0.5, BASELINE: 0.0}
runner = CliRunner()


# ------------------------------------------------------------------------------------- writers with truth


def _label(rng: np.random.Generator, logit_a: float) -> str:
    """A verdict for position A with log-odds ``logit_a`` of being better: a fifth of votes ties, a third of the
    decisive ones strong, written as either of arena-hard-auto's two spellings."""
    if rng.random() < 0.2:
        return str(rng.choice(["A=B", "B=A"]))
    a_wins = rng.random() < 1 / (1 + math.exp(-logit_a))
    strong = rng.random() < 1 / 3
    spellings = {(True, True): ["A>>B", "B<<A"], (True, False): ["A>B", "B<A"], (False, True): ["B>>A", "A<<B"], (False, False): ["B>A", "A<B"]}
    return str(rng.choice(spellings[(bool(a_wins), strong)]))


def write_arena_hard(root: Path, *, seed: int = 0, prompts: int = 150, judges: tuple[str, ...] = ("gpt-4.1",), bias: float = 0.0,
                     null_share: float = 0.0) -> Path:
    """Judgment files in arena-hard-auto v2.0's shape (gen_judgment.py: game 1 shows the baseline first, game 2
    the model; a game is null when the judge's call failed, its score null when no label was found)."""
    rng = np.random.default_rng(seed)
    for judge in judges:
        folder = root / "data" / "arena-hard-v2.0" / "model_judgment" / judge
        folder.mkdir(parents=True, exist_ok=True)
        for model in (m for m in TRUTH if m != BASELINE):
            lines = []
            for i in range(prompts):
                games: list[dict | None] = []
                for first, second in ((BASELINE, model), (model, BASELINE)):
                    score = _label(rng, TRUTH[first] - TRUTH[second] + bias)
                    game = {"score": score, "judgment": {"answer": f"... [[{score}]]"}, "prompt": [{"role": "user", "content": f"prompt {i}"}]}
                    games.append(None if rng.random() < null_share else game)
                lines.append({"uid": f"{i:016x}", "category": "hard_prompt", "judge": judge, "model": model, "baseline": BASELINE, "games": games})
            (folder / f"{model}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root / "data"


def write_alpaca_eval(root: Path, *, seed: int = 0, instructions: int = 150, baseline: str = "gpt4_1106_preview") -> Path:
    """annotations.json per model, AlpacaEval's shape: the baseline is generator_1, the preference the chance that
    output_2 is better plus 1; some exactly 1, 2 or 1.5, some 0 (a draw), some null."""
    rng = np.random.default_rng(seed)
    for model in ("model-a", "model-b", "model-c"):
        records = []
        for i in range(instructions):
            p = 1 + 1 / (1 + math.exp(-(TRUTH[model] + rng.normal(0, 1))))
            kind = rng.random()
            preference: float | None = float(round(p)) if kind < 0.3 else 1.5 if kind < 0.35 else 0.0 if kind < 0.38 else None if kind < 0.4 else p
            records.append({"dataset": "helpful_base", "instruction": f"instruction {i}", "output_1": f"answer {i} of {baseline}",
                            "generator_1": baseline, "output_2": f"# answer {i}\n- of {model}", "generator_2": model,
                            "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": preference})
        folder = root / "results" / model / "weighted_alpaca_eval_gpt4_turbo"
        folder.mkdir(parents=True)
        (folder / "annotations.json").write_text(json.dumps(records, indent=1))
    return root / "results"


# ----------------------------------------------------------------------------------- hand conversions


def hand_arena_hard(files: list[Path], strong: float = 3.0) -> pl.DataFrame:
    """show_result.py's reading, in plain polars: games exploded, game 0 with the baseline as A, game 1 with the
    model as A; a strong verdict counts ``strong`` times (as a weight), null games and scores dropped."""
    position = {"A>>B": ("A", strong), "A>B": ("A", 1.0), "A=B": ("tie", 1.0), "A<B": ("B", 1.0), "A<<B": ("B", strong),
                "B>>A": ("B", strong), "B>A": ("B", 1.0), "B=A": ("tie", 1.0), "B<A": ("A", 1.0), "B<<A": ("A", strong)}
    lines = pl.concat([pl.read_ndjson(f) for f in files], how="diagonal_relaxed")
    games = (
        lines.with_columns(pl.int_ranges(pl.col("games").list.len()).alias("game"))
        .explode("games", "game")
        .with_columns(pl.col("games").struct.field("score").alias("score"))
        .drop_nulls("score")
    )
    return games.select(
        pl.when(pl.col("game") == 0).then("baseline").otherwise("model").alias("model_a"),
        pl.when(pl.col("game") == 0).then("model").otherwise("baseline").alias("model_b"),
        pl.col("score").replace_strict({k: v[0] for k, v in position.items()}).replace({"A": "model_a", "B": "model_b"}).alias("outcome"),
        pl.col("score").replace_strict({k: v[1] for k, v in position.items()}, return_dtype=pl.Float64).alias("weight"),
    )


def hand_alpaca_eval(files: list[Path]) -> pl.DataFrame:
    """Each annotation as a win of output_1 weighted 2 − p and one of output_2 weighted p − 1 (0 read as 1.5)."""
    records = pl.concat([pl.read_json(f, schema_overrides={"preference": pl.Float64}) for f in files]).drop_nulls("preference")
    p = pl.when(pl.col("preference") == 0).then(1.5).otherwise(pl.col("preference"))
    pairs = records.select(pl.col("generator_1").alias("model_a"), pl.col("generator_2").alias("model_b"), p.alias("p"))
    return pl.concat([
        pairs.select("model_a", "model_b", pl.lit("model_a").alias("outcome"), (2 - pl.col("p")).alias("weight")),
        pairs.select("model_a", "model_b", pl.lit("model_b").alias("outcome"), (pl.col("p") - 1).alias("weight")),
    ])


def scores(board: pl.DataFrame) -> dict[str, float]:
    return dict(zip(board["model"], board["score"]))


# ------------------------------------------------------------------------------------------ round trips


def test_arena_hard_gives_the_leaderboard_of_a_hand_conversion(tmp_path):
    data = write_arena_hard(tmp_path, null_share=0.05)
    files = source_files([data], ARENA_HARD)
    assert [f.name for f in files] == ["model-a.jsonl", "model-b.jsonl", "model-c.jsonl"]
    read = arena.fit(data, input=ARENA_HARD, ci="none")
    hand = arena.fit(hand_arena_hard(files), ci="none")
    assert scores(read.leaderboard) == pytest.approx(scores(hand.leaderboard), abs=1e-9)
    assert read.leaderboard["model"].to_list()[:3] == ["model-a", "model-b", BASELINE]  # the truth's order
    assert read.leaderboard.select("model", "battles").sort("model").equals(hand.leaderboard.select("model", "battles").sort("model"))


def test_strong_weight_sets_the_weight_of_strong_verdicts(tmp_path):
    data = write_arena_hard(tmp_path, prompts=40)
    files = source_files([data], ARENA_HARD)
    for strong in (1.0, 5.0):
        read = arena.fit(data, input=InputOptions(fmt="arena-hard", strong_weight=strong), ci="none", min_battles=1)
        hand = arena.fit(hand_arena_hard(files, strong), ci="none", min_battles=1)
        assert scores(read.leaderboard) == pytest.approx(scores(hand.leaderboard), abs=1e-9)


def test_arena_hard_votes_keep_positions_judge_prompt_and_a_vote_id(tmp_path):
    data = write_arena_hard(tmp_path, prompts=5)
    battles = arena.load_battles(data, input=ARENA_HARD).battles
    assert battles.height == 30 and battles["battle_id"].n_unique() == 30
    first = battles.filter(pl.col("game") == 1)
    assert (first["model_a"] == BASELINE).all() and (battles.filter(pl.col("game") == 2)["model_b"] == BASELINE).all()
    assert set(battles["judge"]) == {"gpt-4.1"} and set(battles["category"]) == {"hard_prompt"} and set(battles["baseline"]) == {BASELINE}
    assert battles["question_id"].n_unique() == 5  # the prompt, not the vote
    assert not battles["battle_id"].is_in(battles["question_id"].implode()).any()
    line = json.loads((data / "arena-hard-v2.0" / "model_judgment" / "gpt-4.1" / "model-a.jsonl").read_text().splitlines()[0])
    votes = battles.filter((pl.col("question_id") == line["uid"]) & (pl.col("model_b") == "model-a") | (pl.col("model_a") == "model-a") & (pl.col("question_id") == line["uid"]))
    for game, vote in zip(line["games"], votes.sort("game").iter_rows(named=True)):
        outcome, strong = VERDICTS[game["score"]]
        assert (vote["outcome"], vote["weight"]) == (outcome, 3.0 if strong else 1.0)


def test_ingesting_judgments_again_adds_nothing(tmp_path):
    data = write_arena_hard(tmp_path / "logs", prompts=10, null_share=0.1)
    store = tmp_path / "store"
    first = arena.ingest([data], store, input=ARENA_HARD)
    second = arena.ingest([data], store, input=ARENA_HARD)
    stored = sum(s.stored for s in first.summaries)
    assert stored > 0 and sum(s.stored for s in second.summaries) == 0
    assert sum(s.duplicates for s in second.summaries) == stored
    from arena_cli.io.store import Store

    quarantine = Store.open(store).read("quarantine", ["reason"])
    assert quarantine is not None and set(quarantine["reason"]) == {"no_verdict"}
    assert quarantine.height == sum(sum(s.quarantined.values()) for s in first.summaries)  # not twice
    from_store = arena.fit(store=store, ci="none", min_battles=1)
    from_files = arena.fit(data, input=ARENA_HARD, ci="none", min_battles=1)
    assert scores(from_store.leaderboard) == pytest.approx(scores(from_files.leaderboard), abs=1e-9)


def test_alpaca_eval_gives_the_leaderboard_of_a_hand_conversion_and_its_win_rate(tmp_path):
    results = write_alpaca_eval(tmp_path)
    files = source_files([results], ALPACA_EVAL)
    read = arena.fit(results, input=ALPACA_EVAL, ci="none")
    hand = arena.fit(hand_alpaca_eval(files), ci="none")
    assert scores(read.leaderboard) == pytest.approx(scores(hand.leaderboard), abs=1e-9)
    assert read.leaderboard["model"].to_list()[:2] == ["model-a", "model-b"]
    # AlpacaEval's win rate (metrics/helpers.py: mean of p - 1, 0 read as 1.5, nulls dropped) is the weighted win rate
    pairs = arena.matrix(results, input=ALPACA_EVAL, long=True, min_battles=1).pairs
    for f in files:
        records = [r["preference"] for r in json.loads(f.read_text()) if r["preference"] is not None]
        expected = float(np.mean([(1.5 if p == 0 else p) - 1 for p in records]))
        model = f.parent.parent.name
        row = pairs.filter((pl.col("model") == model) & (pl.col("opponent") == "gpt4_1106_preview"))
        assert row["win_rate"].item() == pytest.approx(expected, abs=1e-12)


def test_alpaca_eval_fractional_preferences_are_two_weighted_votes(tmp_path):
    path = tmp_path / "annotations.json"
    records = [{"instruction": f"i{k}", "output_1": "x", "generator_1": "base", "output_2": "y", "generator_2": "m", "annotator": "judge", "preference": p}
               for k, p in enumerate((1.25, 1.0, 2.0, 1.5, 0))]
    path.write_text(json.dumps(records))
    battles = arena.load_battles(path).battles.sort("source_row", "battle_id")  # found by its fields
    assert battles.select("source_row", "outcome", "weight").rows() == [
        (1, "model_a", 0.75), (1, "model_b", 0.25), (2, "model_a", 1.0), (3, "model_b", 1.0), (4, "tie", 1.0), (5, "tie", 1.0),
    ]
    assert battles["battle_id"].n_unique() == 6 and set(battles["judge"]) == {"judge"}
    assert battles["question_id"].n_unique() == 5 and battles["question_id"][0] == battles["question_id"][1] != "i0"
    assert battles["conversation_b"][0].to_list() == [{"role": "user", "content": "i0"}, {"role": "assistant", "content": "y"}]
    assert battles["preference"].to_list() == [1.25, 1.25, 1.0, 2.0, 1.5, 0.0]


# ------------------------------------------------------------------------------------- real excerpts


def test_real_arena_hard_judgments_are_read_in_both_shapes():
    files = source_files([AH_FIXTURE / "data", AH_FIXTURE / "v0.1-before-v2.0-shape.jsonl"], ARENA_HARD)
    result = read_sources(files, ARENA_HARD)
    battles = result.battles
    assert result.quarantine.height == 0 and battles.height == 24
    assert [s.rows_read for s in result.summaries] == [4, 18, 2]  # a row is a game
    assert set(battles["judge"]) == {"gpt-4-1106-preview"} and set(battles["baseline"]) == {"gpt-4-0314"}
    assert battles.filter(pl.col("weight") == 3.0).select("model_a", "outcome").rows() == [("gpt-4-0613", "model_b")] * 2  # two B>>A in game 2
    old = battles.filter(pl.col("model_a") == "sky-T1-32B-Preview")
    assert old.select("question_id", "category", "outcome", "game").rows() == [("93c9b4bb32f4422f954c7af9ea2bdfcd", None, "model_a", 2)]
    scheme = battles.filter(pl.col("question_id") == "b4b1c3f799f6459b8cfb15fa27e399e7").sort("game")
    assert scheme.select("model_a", "model_b", "outcome").rows() == [("gpt-4-0314", "gpt-4-0613", "model_a"), ("gpt-4-0613", "gpt-4-0314", "model_b")]
    consistency = position_consistency(battles).row(0, named=True)
    assert (consistency["pairs"], consistency["consistent"]) == (12, 7)


def test_real_arena_hard_answers_join_both_sides():
    answers = InputOptions(fmt="arena-hard", answers=AH_FIXTURE / "data" / "arena-hard-v0.1")
    battles = read_sources([AH_FIXTURE / "data"], answers).battles
    assert battles["conversation_a"].is_not_null().all() and battles["conversation_b"].is_not_null().all()
    assert battles["meta_tokens_a"].is_null().all()  # v0.1 answers have no metadata: their texts are joined instead
    vote = battles.filter((pl.col("question_id") == "b4b1c3f799f6459b8cfb15fa27e399e7") & (pl.col("game") == 1)).row(0, named=True)
    assert vote["conversation_a"][0]["content"] == "Write a Scheme program to decide whether a number is odd."
    assert vote["conversation_b"][1]["content"].startswith("Sure, here is a simple Scheme program")  # gpt-4-0613's answer
    features = arena.compute_features(battles, workers=1).frame
    assert (features["feature_source"] == "text").all() and (features["tokens_a"] > 0).all()


def test_answer_metadata_becomes_the_counts_of_both_sides(tmp_path):
    real = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "arena-hard" / "v2.0-o3-mini-2025-01-31.jsonl"
    if not real.exists():
        pytest.skip(f"../shared not found ({real})")
    answers = tmp_path / "data" / "arena-hard-v2.0" / "model_answer"
    answers.mkdir(parents=True)
    lines = real.read_text().splitlines()[:3]
    (answers / f"{BASELINE}.jsonl").write_text("".join(line + "\n" for line in lines))
    mine = [json.loads(line) | {"model": "model-a"} for line in lines[:2]]
    (answers / "model-a.jsonl").write_text("".join(json.dumps(a) + "\n" for a in mine))
    judged = tmp_path / "data" / "arena-hard-v2.0" / "model_judgment" / "gpt-4.1"
    judged.mkdir(parents=True)
    (judged / "model-a.jsonl").write_text("".join(
        json.dumps({"uid": json.loads(line)["uid"], "category": "hard_prompt", "model": "model-a", "games": [{"score": "A>B"}, {"score": "B>A"}]}) + "\n"
        for line in lines))
    battles = read_sources([tmp_path / "data"], InputOptions(fmt="arena-hard", answers=tmp_path / "data" / "arena-hard-v2.0")).battles
    first = json.loads(lines[0])
    vote = battles.filter((pl.col("question_id") == first["uid"]) & (pl.col("game") == 1)).row(0, named=True)
    metadata = first["metadata"]
    assert vote["meta_tokens_a"] == vote["meta_tokens_b"] == metadata["token_len"]
    assert vote["meta_bold_star_a"] == metadata["bold_count"]["**"] and vote["meta_ordered_b"] == metadata["list_count"]["ordered"]
    assert vote["conversation_a"] is None
    third = battles.filter(pl.col("question_id") == json.loads(lines[2])["uid"])  # model-a has no answer to it
    assert third["meta_tokens_a"].is_null().all() and third["conversation_a"].is_null().all()


def test_real_alpaca_eval_annotations_are_read():
    result = read_sources([AE_FIXTURE], ALPACA_EVAL)
    assert result.quarantine["reason"].to_list() == ["no_verdict", "no_verdict"]
    battles = result.battles
    assert battles.height == 8 * 2 + 5 + 4
    assert set(battles["judge"]) == {"weighted_alpaca_eval_gpt4_turbo", "alpaca_eval_gpt4", "alpaca_eval_cot_gpt4_turbo_fn"}
    assert battles.filter(pl.col("model_b") == "LMCocktail-10.7B-v1")["outcome"].sort().to_list() == ["model_a", "model_a", "model_b", "model_b", "tie"]
    assert {"raw_completion", "referenced_models", "price_per_example"} <= set(battles.columns)
    for folder in sorted(AE_FIXTURE.glob("results/*/*")):
        prefs = [r["preference"] for r in json.loads((folder / "annotations.json").read_text()) if r["preference"] is not None]
        mine = battles.filter(pl.col("model_b") == folder.parent.name)
        won = mine.select((pl.col("weight") * ((pl.col("outcome") == "model_b") + 0.5 * (pl.col("outcome") == "tie"))).sum() / pl.col("weight").sum()).item()
        assert won == pytest.approx(np.mean([(1.5 if p == 0 else p) - 1 for p in prefs]), abs=1e-12)


# ------------------------------------------------------------------------------------------ diagnostics


def test_position_consistency_counts_swapped_pairs():
    votes = pl.DataFrame({
        "judge": ["j"] * 6 + ["k"] * 2,
        "question_id": ["q1", "q1", "q2", "q2", "q3", "q4", "q1", "q1"],
        "model_a": ["x", "y", "x", "y", "x", "x", "x", "y"],
        "model_b": ["y", "x", "y", "x", "y", "y", "y", "x"],
        "outcome": ["model_a", "model_b", "model_a", "model_a", "tie", "model_b", "tie", "tie"],
    })
    table = position_consistency(votes)
    assert table.rows() == [("j", 6, 2, 1, 0.5, 0.75, 0.25, 0.0), ("k", 2, 1, 1, 1.0, 0.0, 0.0, 1.0)]


def test_a_judge_with_position_bias_favours_the_first_position(tmp_path):
    fair = arena.judges(write_arena_hard(tmp_path / "fair", prompts=100), input=ARENA_HARD).judges.row(0, named=True)
    biased = arena.judges(write_arena_hard(tmp_path / "biased", prompts=100, bias=1.5), input=ARENA_HARD).judges.row(0, named=True)
    assert fair["pairs"] == biased["pairs"] == 300
    assert abs(fair["first_won"] - fair["second_won"]) < 0.1 and biased["first_won"] - biased["second_won"] > 0.3
    assert biased["consistency"] < fair["consistency"]


def test_judges_agree_with_themselves_and_not_with_a_contrary_judge(tmp_path):
    data = write_arena_hard(tmp_path, prompts=60)
    judged = data / "arena-hard-v2.0" / "model_judgment"
    shutil.copytree(judged / "gpt-4.1", judged / "copy")
    contrary = judged / "contrary"
    contrary.mkdir()
    mirror = {"A": "B", "B": "A"}
    for f in (judged / "gpt-4.1").iterdir():
        lines = [json.loads(line) for line in f.read_text().splitlines()]
        for line in lines:
            line["judge"] = "contrary"
            for game in line["games"]:
                game["score"] = "".join(mirror.get(c, c) for c in game["score"])  # the other answer wins
        (contrary / f.name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    for f in (judged / "copy").iterdir():
        f.write_text(f.read_text().replace('"judge": "gpt-4.1"', '"judge": "copy"'))
    report = arena.judges(data, input=ARENA_HARD)
    agreement = {(r["judge"], r["other_judge"]): r for r in report.agreement.iter_rows(named=True)}
    assert agreement[("copy", "gpt-4.1")]["spearman"] == pytest.approx(1.0) and agreement[("copy", "gpt-4.1")]["kendall"] == pytest.approx(1.0)
    assert agreement[("contrary", "gpt-4.1")]["spearman"] == pytest.approx(-1.0) and agreement[("contrary", "gpt-4.1")]["models"] == 4
    assert report.scores.filter(pl.col("judge") == "copy")["score"].to_list() == report.scores.filter(pl.col("judge") == "gpt-4.1")["score"].to_list()


def test_judges_command_prints_its_tables(tmp_path):
    data = write_arena_hard(tmp_path, prompts=30)
    result = runner.invoke(app, ["judges", str(data), "-i", "arena-hard", "-f", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["kind"] == "judges" and set(document["tables"]) == {"judges", "agreement", "scores"}
    assert document["tables"]["judges"][0]["pairs"] == 90 and document["tables"]["agreement"] == []
    assert document["meta"]["settings"] == {"min_battles": 50}
    table = runner.invoke(app, ["judges", str(data), "-i", "arena-hard"])
    assert table.exit_code == 0 and "Position consistency per judge" in table.stdout


# ------------------------------------------------------------------------------------- hostile records


def _ingest(tmp_path: Path, files: list[Path], *options: str):
    return runner.invoke(app, ["ingest", *map(str, files), "--store", str(tmp_path / "store"), "-f", "json", *options])


def test_arena_hard_records_that_are_no_votes_are_quarantined_with_reasons(tmp_path):
    path = tmp_path / "judgments.jsonl"
    lines = [
        {"uid": "u1", "model": "m", "category": "hard_prompt"},
        {"uid": "u2", "model": "m", "category": "hard_prompt", "games": "not a list"},
        {"uid": "u3", "model": "m", "category": "hard_prompt", "games": [{"score": "A>>>B"}, {"score": "a>b"}]},
        {"uid": "u4", "model": "m", "category": "hard_prompt", "games": [None, {"score": None}]},
        {"uid": "u5", "model": "m", "category": "hard_prompt", "games": []},
        {"uid": "u6", "model": "m", "category": "no-such-category", "games": [{"score": "A>B"}, {"score": "A>B"}]},
        {"uid": "u7", "model": BASELINE, "category": "hard_prompt", "games": [{"score": "A>B"}, {"score": "A>B"}]},
        {"uid": "u8", "category": "hard_prompt", "games": [{"score": "A>B"}, {"score": "A>B"}]},
        {"model": "m", "category": "hard_prompt", "games": [{"score": "A>B"}, {"score": "A>B"}]},
        {"uid": "u10", "model": "m", "category": "hard_prompt", "games": ["A>B", {"score": "B>A"}]},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + "{not json\n")
    result = _ingest(tmp_path, [path], "-i", "arena-hard")
    assert result.exit_code == 0, result.output
    source = json.loads(result.stdout)["tables"]["sources"][0]
    assert source["stored"] == 2  # u3's game 2: a>b; u10's game 2
    assert source["quarantined_by_reason"] == "missing_model 2, no_verdict 2, self_battle 1, unknown_winner 1, unparseable 1, wrong_type 4"
    assert source["rows_read"] == source["stored"] + source["quarantined"]
    from arena_cli.io.store import Store

    quarantine = Store.open(tmp_path / "store").read("quarantine", ["source_row", "reason", "detail", "raw"]).sort("source_row")
    details = dict(zip(quarantine["source_row"], quarantine["detail"]))
    assert details[1] == "games: missing" and details[2] == "games: not a list of games"
    assert details[4] == "game 1: no verdict (its score is null or missing); game 2: no verdict (its score is null or missing)"
    assert details[10] == "game 1: A>B is not a game (an object with a score)"
    assert "--judgment-baseline" in details[6] and "unknown verdict \"A>>>B\"" in details[3]
    assert json.loads(quarantine.filter(pl.col("source_row") == 4)["raw"].item()) == lines[3]
    mapped = read_sources([path], InputOptions(fmt="arena-hard", winner_map={"A>>>B": "model_a"}, judgment_baseline="gpt-4"))
    assert mapped.battles.filter(pl.col("question_id") == "u6")["model_b"].to_list() == ["m", "gpt-4"]
    assert mapped.battles.filter(pl.col("question_id") == "u3")["outcome"].to_list() == ["model_a", "model_a"]


def test_alpaca_eval_records_that_are_no_votes_are_quarantined_with_reasons(tmp_path):
    path = tmp_path / "annotations.json"
    base = {"output_1": "x", "generator_1": "base", "output_2": "y", "generator_2": "m"}
    records = [{"preference": "abc"}, {"preference": 3}, {"preference": None}, {"preference": 0.5}, {"generator_2": "", "preference": 1},
               {"generator_2": "base", "preference": 1}, {"preference": 1.5}, {"preference": " "}]
    path.write_text(json.dumps([base | {"instruction": f"i{k}"} | r for k, r in enumerate(records)]))
    result = _ingest(tmp_path, [path], "-i", "alpaca-eval")
    assert result.exit_code == 0, result.output
    source = json.loads(result.stdout)["tables"]["sources"][0]
    assert source["stored"] == 1 and source["quarantined_by_reason"] == "missing_model 1, no_verdict 2, self_battle 1, wrong_type 3"
    from arena_cli.io.store import Store

    details = Store.open(tmp_path / "store").read("quarantine", ["source_row", "detail"]).sort("source_row")["detail"].to_list()
    assert details[-1] == details[2] == "preference: missing, null or empty (the annotator gave no verdict)"


@pytest.mark.parametrize("mixed", [True, False], ids=["beside text names", "every name nested"])
def test_a_judge_log_model_name_that_is_a_list_or_an_object_rejects_its_record(tmp_path, mixed):
    """A model name given as an object or a list is no name (its JSON text would be taken for one): its record is
    a wrong type, named, in a batch whose other names are text (read line by line) and in one where all are nested
    (read with their types)."""
    games = [{"score": "A>B"}, {"score": "B>A"}]
    hard = [{"uid": "u1", "model": {"n": 1}, "category": "hard_prompt", "games": games},
            {"uid": "u2", "model": "m", "baseline": ["b"], "category": "hard_prompt", "games": games}]
    alpaca = [{"generator_1": {"n": 1}, "generator_2": "m", "preference": 1, "instruction": "i1"},
              {"generator_1": "base", "generator_2": ["m"], "preference": 2, "instruction": "i2"}]
    if mixed:
        hard.append({"uid": "u3", "model": "m", "category": "hard_prompt", "games": games})
        alpaca.append({"generator_1": "base", "generator_2": "m", "preference": 1, "instruction": "i3"})
    else:
        hard, alpaca = hard[:1], alpaca[:1]
    for kind, records, names in (("arena-hard", hard, ["model", "baseline"]), ("alpaca-eval", alpaca, ["generator_1", "generator_2"])):
        path = tmp_path / kind / "log.jsonl"
        path.parent.mkdir()
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        result = runner.invoke(app, ["ingest", str(path), "--store", str(tmp_path / kind / "store"), "-f", "json", "-i", kind])
        assert result.exit_code == 0, result.output
        from arena_cli.io.store import Store

        quarantine = Store.open(tmp_path / kind / "store").read("quarantine", ["source_row", "reason", "detail"]).sort("source_row")
        expected = [(row, "wrong_type", f"{name}: a list or an object, not text") for row, name in zip((1, 2), names)][: len(records) - mixed]
        assert quarantine.rows() == expected, kind
        stored = json.loads(result.stdout)["tables"]["sources"][0]["stored"]
        assert stored == (2 if kind == "arena-hard" else 1) * mixed


@pytest.mark.parametrize(("args", "needle"), [
    (["-i", "arena-hard", "{dir}"], "no judgment files"),
    (["-i", "alpaca-eval", "{dir}"], "no annotations.json"),
    (["-i", "arena-hard", "{votes}"], "not arena-hard records, no field model, games"),
    (["-i", "alpaca-eval", "{votes}"], "not alpaca-eval records"),
    (["--answers", "{dir}", "{votes}"], "--answers applies to arena-hard-auto judgment files"),
    (["--strong-weight", "5", "{votes}"], "--strong-weight applies to arena-hard-auto judgment files"),  # (it was ignored)
    (["-i", "arena-hard", "--map", "judge=x", "{judged}"], "--map does not apply to --input-format arena-hard"),
    (["-i", "arena-hard", "--answers", "{dir}", "{judged}"], "no answer files"),
    (["-i", "arena-hard", "--answers", "{bad_answers}", "{judged}"], "line 1: not a JSON object"),
])
@pytest.mark.parametrize("command", ["ingest", "fit", "judges"])
def test_inputs_that_do_not_fit_are_exit_3_with_one_line(tmp_path, args, needle, command):
    (tmp_path / "empty").mkdir()
    votes = tmp_path / "votes.jsonl"
    votes.write_text(json.dumps({"model_a": "x", "model_b": "y", "winner": "model_a"}) + "\n")
    judged = tmp_path / "m.jsonl"
    judged.write_text(json.dumps({"uid": "u", "model": "m", "category": "hard_prompt", "games": [{"score": "A>B"}, {"score": "A>B"}]}) + "\n")
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "m.jsonl").write_text("[1]\n")
    paths = {"dir": tmp_path / "empty", "votes": votes, "judged": judged, "bad_answers": tmp_path / "answers"}
    filled = [a.format(**{k: str(v) for k, v in paths.items()}) for a in args]
    extra = ["--store", str(tmp_path / "store")] if command == "ingest" else ["--min-battles", "1"]
    result = runner.invoke(app, [command, *filled, *extra])
    assert result.exit_code == 3, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], result.stderr
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
@pytest.mark.parametrize("command", ["ingest", "fit", "info", "judges", "features", "matrix"])
def test_strong_weight_out_of_range_is_a_usage_error(tmp_path, value, command):
    judged = tmp_path / "m.jsonl"
    judged.write_text("")
    extra = ["--store", str(tmp_path / "store")] if command == "ingest" else []
    result = runner.invoke(app, [command, str(judged), "--strong-weight", value, *extra])
    assert result.exit_code == 2 and "--strong-weight" in result.stderr, result.output
    with pytest.raises(arena.OptionError):
        InputOptions(strong_weight=float(value))


def test_empty_judge_logs_are_empty_logs(tmp_path):
    (tmp_path / "m.jsonl").write_text("")
    (tmp_path / "annotations.json").write_text("[]")
    for path, fmt in ((tmp_path / "m.jsonl", "arena-hard"), (tmp_path / "annotations.json", "alpaca-eval")):
        ingested = runner.invoke(app, ["ingest", str(path), "-i", fmt, "--store", str(tmp_path / f"store-{fmt}")])
        assert ingested.exit_code == 0 and "no rows" in ingested.stderr, ingested.output
        fitted = runner.invoke(app, ["fit", str(path), "-i", fmt])
        assert fitted.exit_code == 6 and "Traceback" not in fitted.output, fitted.output


GAMES = st.one_of(
    st.none(), st.just("text"),
    st.lists(st.one_of(st.none(), st.fixed_dictionaries({}), st.fixed_dictionaries({"score": st.one_of(
        st.none(), st.sampled_from([*VERDICTS, "A>>>B", "", " a>b ", "tie"]), st.integers(0, 5))})), max_size=3),
)
LINES = st.lists(st.fixed_dictionaries({
    "uid": st.one_of(st.none(), st.sampled_from(["u1", "u2", "u3"])),
    "model": st.one_of(st.none(), st.sampled_from(["m", "", BASELINE])),
    "category": st.one_of(st.none(), st.sampled_from(["hard_prompt", "creative_writing", "unknown"])),
    "games": GAMES,
}), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=LINES, strong=st.sampled_from([0.0, 2.5, 3.0]))
def test_any_judgment_lines_are_votes_or_quarantined(tmp_path_factory, lines, strong):
    path = tmp_path_factory.mktemp("hostile") / "m.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = read_sources([path], InputOptions(fmt="arena-hard", strong_weight=strong))
    summary = result.summaries[0]
    assert summary.rows_read == summary.stored + summary.duplicates + sum(summary.quarantined.values())
    assert set(result.battles["weight"].to_list()) <= {1.0, strong}
    assert result.battles["source_row"].value_counts()["count"].max() in (None, 1, 2)
    baselines = {"hard_prompt": BASELINE, "creative_writing": "gemini-2.0-flash-001", None: "gpt-4-0314"}
    usable = [i + 1 for i, line in enumerate(lines)
              if line["uid"] and line["model"] and line["model"] != baselines.get(line["category"], line["model"]) and isinstance(line["games"], list)]
    assert set(result.battles["source_row"]) <= set(usable)
    assert set(result.quarantine["reason"]) <= {"wrong_type", "missing_model", "self_battle", "no_verdict", "unknown_winner", "conflicting_duplicate"}
