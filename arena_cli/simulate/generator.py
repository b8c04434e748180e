"""The generator: models with a true strength and a style profile, battles among them, answers' counts drawn
from the styles, and outcomes drawn from strength plus style (the model is stated in the package docstring)."""

from __future__ import annotations

import gzip
import io
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from arena_cli.errors import InputError
from arena_cli.features.tokenizer import OFFLINE_ALIASES
from arena_cli.io.atomic import put_bytes, writable_directory, write_output
from arena_cli.io.options import DEFAULT_ENCODING
from arena_cli.schema import META_COUNTS, meta_paths
from arena_cli.simulate.compose import compose_texts, count_tokens
from arena_cli.simulate.options import BATTLES, MODEL_SEED, MODELS, POSITION_BIAS, SEED, true_style_coefficients
from arena_cli.simulate.texts import MODEL_FAMILIES, MODEL_VARIANTS

GENERATOR = "arena-cli simulate"
#: Bumped whenever the same seed would produce different data.
GENERATOR_VERSION = 1

ELO_PER_LOGIT = 400 / math.log(10)
#: LMArena's four style groups, the ones the generator draws counts for: its own, whatever groups the fit knows.
STYLE_GROUPS: dict[str, tuple[str, ...]] = {
    "length": ("tokens",),
    "header": ("h1", "h2", "h3", "h4", "h5", "h6"),
    "list": ("ordered", "unordered"),
    "bold": ("bold_star", "bold_underscore"),
}
#: Draw probability of an even match (p = 1/2); lopsided matches draw less often.
DEFAULT_TIE_SHARE = 0.45
#: Tie models: ``half`` (draws by tie_share, E[y] = p for y = 1, 1/2, 0) or ``davidson`` (Davidson's, with nu).
TIE_MODELS = ("half", "davidson")
#: Tokens a typical model's answer is sized to (each model's verbosity is spread around it).
DEFAULT_VERBOSITY = 130.0
#: The spread (sd of the log) of the models' popularity: how unevenly pairs are sampled.
DEFAULT_POPULARITY_SD = 0.5
#: P(a draw is labelled both_bad) = logistic(INTERCEPT - SLOPE * (beta_a + beta_b) / 2).
BOTH_BAD_INTERCEPT = -0.7
BOTH_BAD_SLOPE = 1.0

START_TIMESTAMP = 1740960000  # 2025-03-03T00:00:00Z
DAYS = 28
TIME_BINS = 100               # the sampling weights of the pairs change with time, bin by bin
NEW_MODEL_BOOST = 2.0         # a newly released model is sampled up to (1 + boost) times more often...
NEW_MODEL_DECAY = 0.12        # ...and the boost fades with this time constant (fraction of the period)

TURN_SHARES = (0.80, 0.14, 0.06)  # conversations of 1, 2 and 3 user turns
LANGUAGE_SHARES = {
    "English": 0.80, "Chinese": 0.06, "Spanish": 0.03, "German": 0.03, "French": 0.03, "Russian": 0.03,
    "Japanese": 0.02,
}
#: Per category: share of battles, length factor, markdown factor (headers, bold), list factor, and the probability
#: of each of two possible code blocks.
CATEGORIES: dict[str, tuple[float, float, float, float, float]] = {
    "general": (0.33, 1.0, 1.0, 1.0, 0.01),
    "coding": (0.22, 1.2, 0.9, 0.8, 0.60),
    "math": (0.10, 1.1, 0.8, 1.2, 0.08),
    "creative_writing": (0.15, 1.1, 0.3, 0.2, 0.0),
    "advice": (0.20, 1.0, 1.1, 1.3, 0.0),
}

#: Token estimates of the parts (cl100k, measured on the English banks), used to size the prose so that an answer
#: is about as long as its model's verbosity asks; without texts they stand in for the measured count.
SENTENCE_TOKENS = 13
ITEM_EXTRA_TOKENS = 3
HEADER_TOKENS = 4
BOLD_TOKENS = 4
CODE_TOKENS = 38


@dataclass(frozen=True)
class Simulation:
    """Simulated battles in the FastChat / arena-human-preference shape, and the truth they were drawn from.

    ``battles`` columns: question_id, model_a, model_b, winner, judge, tstamp, language, turn, anony, category,
    [conversation_a, conversation_b when simulated with texts], conv_metadata (LMArena's per-side counts).
    """

    battles: pl.DataFrame
    truth: dict[str, Any]

    def features(self) -> pl.DataFrame:
        """The per-side counts as feature columns ``<name>_a`` / ``<name>_b`` (names of ``schema.META_COUNTS``),
        with battle_id, model_a, model_b, outcome and judge: the frame a fit needs, without ingesting anything."""
        meta = pl.col("conv_metadata")
        columns: list[str | pl.Expr] = [
            pl.col("question_id").alias("battle_id"), "model_a", "model_b", pl.col("winner").alias("outcome"), "judge",
        ]
        for side in ("a", "b"):
            for name, path in meta_paths(side).items():
                expr = meta
                for key in path:
                    expr = expr.struct.field(key)
                columns.append(expr.alias(f"{name}_{side}"))
        return self.battles.select(columns)


# ------------------------------------------------------------------------------------------------------------------
# Drawing
# ------------------------------------------------------------------------------------------------------------------


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _categorical(rng: np.random.Generator, shares: Mapping[str, float], size: int) -> np.ndarray:
    p = np.array(list(shares.values()), dtype=float)
    return rng.choice(len(p), size=size, p=p / p.sum())


def _draw_models(
    rng: np.random.Generator, n_models: int, elo_spread: float, verbosity: float, popularity_sd: float,
) -> dict[str, np.ndarray]:
    """Strengths spread evenly over ``elo_spread`` Elo points; style intensity anti-correlated with strength (some
    verbose, markdown-heavy models are weak in substance, some terse ones strong); answer lengths around
    ``verbosity`` tokens; popularity lognormal with sd ``popularity_sd``; release and retirement dates."""
    families = rng.permutation(len(MODEL_FAMILIES))
    variants = rng.integers(len(MODEL_VARIANTS), size=n_models)
    names = []
    for i in range(n_models):
        generation = "" if i < len(MODEL_FAMILIES) else f"-{i // len(MODEL_FAMILIES) + 1}"
        names.append(f"{MODEL_FAMILIES[families[i % len(MODEL_FAMILIES)]]}{generation}-{MODEL_VARIANTS[variants[i]]}")

    elo = np.linspace(-elo_spread / 2, elo_spread / 2, n_models) + rng.normal(0, elo_spread / (6 * n_models), n_models)
    beta = rng.permutation(elo) / ELO_PER_LOGIT
    beta -= beta.mean()
    standardized = (beta - beta.mean()) / (beta.std() or 1.0)
    intensity = -0.45 * standardized + math.sqrt(1 - 0.45**2) * rng.normal(size=n_models)

    main_level = rng.choice(3, size=n_models, p=[0.15, 0.60, 0.25])
    level_probs = np.full((n_models, 6), 0.01)
    rows = np.arange(n_models)
    level_probs[rows, main_level] += 0.60
    level_probs[rows, main_level + 1] += 0.25
    level_probs[rows, np.maximum(main_level - 1, 0)] += 0.08
    level_probs /= level_probs.sum(axis=1, keepdims=True)

    established = rng.permutation(n_models) < max(2, math.ceil(0.55 * n_models))
    # release and retirement fall on the edges of the sampling time bins, so no model is shown outside its window
    start = np.where(established, 0.0, np.floor(rng.uniform(0.10, 0.75, n_models) * TIME_BINS) / TIME_BINS)
    end = np.ones(n_models)
    n_retired = int(0.2 * established.sum())
    if established.sum() - n_retired >= 2 and n_retired:
        retired = rng.choice(np.flatnonzero(established), size=n_retired, replace=False)
        end[retired] = np.floor(rng.uniform(0.40, 0.80, n_retired) * TIME_BINS) / TIME_BINS

    return {
        "name": np.array(names, dtype=object),
        "beta": beta,
        "verbosity": verbosity * np.exp(0.45 * intensity + 0.15 * rng.normal(size=n_models)),
        "header_rate": np.minimum(0.8 * np.exp(0.9 * intensity + 0.3 * rng.normal(size=n_models)), 5.0),
        "list_rate": np.minimum(2.5 * np.exp(0.7 * intensity + 0.3 * rng.normal(size=n_models)), 9.0),
        "ordered_share": rng.uniform(0.25, 0.75, n_models),
        "bold_rate": np.minimum(1.2 * np.exp(0.9 * intensity + 0.3 * rng.normal(size=n_models)), 7.0),
        "underscore_share": np.where(rng.random(n_models) < 0.15, 0.5, 0.0),
        "bullet": rng.choice(np.array(["-", "*", "+"], dtype=object), size=n_models, p=[0.65, 0.30, 0.05]),
        "nested_lists": rng.random(n_models) < 0.3,
        "level_probs": level_probs,
        "popularity": rng.lognormal(0.0, popularity_sd, n_models),
        "start": start,
        "end": end,
        "new": ~established,
    }


def _pair_weights(models: dict[str, np.ndarray], t: float) -> np.ndarray:
    """Sampling weight of each model at time ``t`` (fraction of the period): popular models and newly released
    ones are shown more, models not yet released or already retired not at all."""
    age = t - models["start"]
    boost = np.where(models["new"], 1 + NEW_MODEL_BOOST * np.exp(-np.clip(age, 0, None) / NEW_MODEL_DECAY), 1.0)
    available = (age >= 0) & (t <= models["end"])
    return models["popularity"] * boost * available


def _draw_battles(rng: np.random.Generator, models: dict[str, np.ndarray], n: int, n_judges: int) -> dict[str, np.ndarray]:
    n_models = len(models["beta"])
    gaps_ms = 1 + np.floor(rng.exponential(DAYS * 86_400_000 / n, size=n))
    elapsed_ms = np.cumsum(gaps_ms)
    fraction = elapsed_ms / elapsed_ms[-1]

    model_a = np.empty(n, dtype=np.int64)
    model_b = np.empty(n, dtype=np.int64)
    edges = np.searchsorted(fraction, np.linspace(0, 1, TIME_BINS + 1)[1:], side="right")
    lo = 0
    for k, hi in enumerate(edges):
        size = hi - lo
        if size:
            w = _pair_weights(models, (k + 0.5) / TIME_BINS)
            w = w / w.sum()
            a = rng.choice(n_models, size=size, p=w)
            b = rng.choice(n_models, size=size, p=w)
            while (same := np.flatnonzero(a == b)).size:
                b[same] = rng.choice(n_models, size=same.size, p=w)
            model_a[lo:hi], model_b[lo:hi] = a, b
        lo = hi
    swap = rng.random(n) < 0.5  # drawing a before b is not symmetric; a coin decides the sides
    model_a, model_b = np.where(swap, model_b, model_a), np.where(swap, model_a, model_b)

    category = _categorical(rng, {c: v[0] for c, v in CATEGORIES.items()}, n)
    return {
        "tstamp": (START_TIMESTAMP * 1000 + elapsed_ms) / 1000,  # exact to the millisecond in decimal
        "model_a": model_a,
        "model_b": model_b,
        "language": _categorical(rng, LANGUAGE_SHARES, n),
        "category": category,
        "turn": 1 + rng.choice(len(TURN_SHARES), size=n, p=TURN_SHARES),
        "judge": np.floor(n_judges * rng.random(n) ** 2).astype(np.int64),  # a few voters cast many votes
        "topic": rng.random(n),
        "question_id": np.frombuffer(rng.bytes(16 * n), dtype=np.uint8).reshape(n, 16),
    }


def _draw_answer_counts(
    rng: np.random.Generator, models: dict[str, np.ndarray], battles: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The markdown counts of every assistant answer (battle x side x turn, flattened), drawn from the answering
    model's style profile; plus the parts that carry no count (prose sentences, code blocks)."""
    turns = battles["turn"]
    n_answers_per_battle = 2 * turns
    battle = np.repeat(np.arange(turns.size), n_answers_per_battle)
    within = np.arange(battle.size) - np.repeat(np.cumsum(n_answers_per_battle) - n_answers_per_battle,
                                                n_answers_per_battle)
    side = within // turns[battle]
    turn = within % turns[battle]
    model = np.where(side == 0, battles["model_a"][battle], battles["model_b"][battle])
    _, length_factor, markdown_factor, list_factor, code_rate = (
        np.array(column)[battles["category"][battle]] for column in zip(*CATEGORIES.values())
    )
    size = battle.size
    scale = np.exp(0.35 * rng.normal(size=size)) * length_factor * np.where(turn > 0, 0.7, 1.0)
    target_tokens = models["verbosity"][model] * scale

    headers = rng.poisson(models["header_rate"][model] * markdown_factor * np.sqrt(scale))
    header_answer = np.repeat(np.arange(size), headers)
    cumulative = np.cumsum(models["level_probs"][model[header_answer]], axis=1)
    header_level = (rng.random(header_answer.size)[:, None] > cumulative[:, :-1]).sum(axis=1)
    level_counts = np.bincount(header_answer * 6 + header_level, minlength=6 * size).reshape(size, 6)

    items = models["list_rate"][model] * list_factor * scale**0.7
    ordered = rng.poisson(items * models["ordered_share"][model])
    unordered = rng.poisson(items * (1 - models["ordered_share"][model]))
    bold = rng.poisson(models["bold_rate"][model] * markdown_factor * np.sqrt(scale))
    bold_underscore = rng.binomial(bold, models["underscore_share"][model])
    code = rng.binomial(2, code_rate)

    # Prose fills the answer up to its target length, with at least one sentence to open it and one per section,
    # and a sentence for each bold span that no list item can carry.
    structure = (
        HEADER_TOKENS * headers + (SENTENCE_TOKENS + ITEM_EXTRA_TOKENS) * (ordered + unordered)
        + BOLD_TOKENS * bold + CODE_TOKENS * code
    )
    minimum = 1 + headers + np.maximum(bold - ordered - unordered, 0)
    sentences = np.maximum(minimum, np.round((target_tokens - structure) / SENTENCE_TOKENS)).astype(np.int64)
    return {
        "battle": battle, "side": side, "turn": turn, "model": model,
        "headers": headers, "header_level": header_level, "level_counts": level_counts,
        "ordered": ordered, "unordered": unordered,
        "bold_star": bold - bold_underscore, "bold_underscore": bold_underscore,
        "code": code, "sentences": sentences,
        "nominal_tokens": structure + SENTENCE_TOKENS * sentences,
    }


def style_design(counts_a: Mapping[str, np.ndarray], counts_b: Mapping[str, np.ndarray]):
    """The style matrix of LMArena (FastChat ``preprocess_for_style``) from per-side counts by feature name:
    per group ``d = (a - b) / (a + b + 1)``, z-scored over the battles with population sd. Returns
    ``(z, mean, sd)``; a group with no variation gets z = 0. Written apart from the fit's design on purpose: the
    truth is defined here, and the fit is checked against it."""
    def total(counts: Mapping[str, np.ndarray], names: tuple[str, ...]) -> np.ndarray:
        return np.sum([counts[n] for n in names], axis=0).astype(float)

    d = np.column_stack([
        (a - b) / (a + b + 1)
        for a, b in ((total(counts_a, names), total(counts_b, names)) for names in STYLE_GROUPS.values())
    ])
    mean, sd = d.mean(axis=0), d.std(axis=0)
    z = np.divide(d - mean, sd, out=np.zeros_like(d), where=sd > 0)
    return z, mean, sd


def simulate(
    n_battles: int = 20_000,
    n_models: int = 25,
    seed: int = 0,
    *,
    texts: bool = True,
    style_coefficients: Mapping[str, float | str] | None = None,
    tie_share: float = DEFAULT_TIE_SHARE,
    elo_spread: float = 300.0,
    model_seed: int | None = None,
    encoding: str = OFFLINE_ALIASES[DEFAULT_ENCODING],
    tie_model: str = "half",
    nu: float = 0.6,
    popularity_sd: float = DEFAULT_POPULARITY_SD,
    n_judges: int | None = None,
    judge_sd: float = 0.0,
    verbosity: float = DEFAULT_VERBOSITY,
    position_bias: float = 0.0,
) -> Simulation:
    """Simulate ``n_battles`` votes among ``n_models`` models; deterministic given ``seed``.

    ``texts=False`` skips the conversations: the counts are drawn as with texts, the token count is the length the
    text would have been sized to (no tokenizer), and everything else (pairs, languages, draws) is the same as with
    texts for the same seed; fast enough for statistical tests over many data sets. ``style_coefficients`` sets
    gamma per group (missing groups keep their default; a number or its text). ``tie_share`` is the draw probability of an even match.
    ``model_seed`` draws the models (strengths, style profiles, release windows) from another seed than the votes:
    one truth, many vote logs, as coverage checks need. ``model_seed=seed`` is the same as leaving it out.

    ``tie_model="davidson"`` draws outcomes from Davidson's model instead, with tie parameter ``nu``:
    ``P(a) : P(draw) : P(b) = e^(s/2) : nu : e^(-s/2)`` for s the logit above (``tie_share`` does not apply).
    ``popularity_sd``: how unevenly models are sampled. ``n_judges`` voters (default ``max(10, n_battles // 6)``),
    a few casting many votes; ``judge_sd`` > 0 gives each voter its own taste, a normal perturbation of every
    model's strength (votes of a voter correlate, as cluster-robust intervals must handle). ``verbosity``: the
    length in tokens a typical model's answers are sized to (a few hundred to a few thousand make realistic texts
    for benchmarks). ``position_bias``: the log-odds advantage of the model shown first (model_a), added to every
    battle's logit. The defaults draw exactly what they always drew for a seed.
    """
    for bounds, value in ((BATTLES, n_battles), (MODELS, n_models), (SEED, seed), (MODEL_SEED, model_seed), (POSITION_BIAS, position_bias)):
        bounds.check(value)
    if not 0 <= tie_share <= 1:
        raise InputError(f"tie share must be between 0 and 1, got {tie_share}")
    if tie_model not in TIE_MODELS or nu <= 0:
        raise InputError(f"tie model must be one of {', '.join(TIE_MODELS)} (nu > 0), got {tie_model!r} (nu {nu})")
    if n_judges is not None and n_judges < 1 or judge_sd < 0 or verbosity <= 0 or popularity_sd < 0:
        raise InputError("n_judges and verbosity must be positive, judge_sd and popularity_sd not negative")
    gamma = true_style_coefficients(style_coefficients)

    # Child 0 of a seed draws the models, children 1-5 the votes: each stage has its own stream, so texts=False
    # changes nothing but the token counts, model_seed nothing but the models, judge_sd nothing but the outcomes.
    if model_seed is None:
        model_seed = seed
    model_rng = np.random.default_rng(np.random.SeedSequence(model_seed).spawn(1)[0])
    models = _draw_models(model_rng, n_models, elo_spread, verbosity, popularity_sd)
    pairs_rng, counts_rng, texts_rng, outcomes_rng, taste_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(6)[1:]
    )
    n_judges = max(10, n_battles // 6) if n_judges is None else n_judges
    battles = _draw_battles(pairs_rng, models, n_battles, n_judges)
    answers = _draw_answer_counts(counts_rng, models, battles)
    if texts:
        answer_texts, prompts = compose_texts(texts_rng, models, battles, answers, list(LANGUAGE_SHARES), list(CATEGORIES))
        answer_tokens = count_tokens(answer_texts, encoding)
    else:
        answer_tokens = answers["nominal_tokens"]

    per_answer = {
        "tokens": answer_tokens,
        **{f"h{i + 1}": answers["level_counts"][:, i] for i in range(6)},
        **{name: answers[name] for name in ("ordered", "unordered", "bold_star", "bold_underscore")},
    }
    slot = answers["battle"] * 2 + answers["side"]
    side_counts = {
        name: np.bincount(slot, weights=values, minlength=2 * n_battles).astype(np.int64).reshape(n_battles, 2)
        for name, values in per_answer.items()
    }
    counts_a = {name: c[:, 0] for name, c in side_counts.items()}
    counts_b = {name: c[:, 1] for name, c in side_counts.items()}
    z, d_mean, d_sd = style_design(counts_a, counts_b)

    beta = models["beta"]
    a, b = battles["model_a"], battles["model_b"]
    style_logit = z @ np.array([gamma[g] for g in STYLE_GROUPS])
    logit = beta[a] - beta[b] + style_logit + position_bias
    if judge_sd:
        taste = taste_rng.normal(0.0, judge_sd, (n_judges, n_models))
        logit = logit + taste[battles["judge"], a] - taste[battles["judge"], b]
    if tie_model == "davidson":
        win_a, win_b = np.exp(logit / 2), np.exp(-logit / 2)
        a_wins = win_a / (win_a + win_b + nu)
        a_or_draw = (win_a + nu) / (win_a + win_b + nu)
    else:
        p = _logistic(logit)
        tau = tie_share * (1 - np.abs(2 * p - 1))
        a_wins, a_or_draw = p - tau / 2, p + tau / 2
    u = outcomes_rng.random(n_battles)
    both_bad = outcomes_rng.random(n_battles) < _logistic(BOTH_BAD_INTERCEPT - BOTH_BAD_SLOPE * (beta[a] + beta[b]) / 2)
    draw = (u >= a_wins) & (u < a_or_draw)
    winner = np.where(u < a_wins, "model_a", np.where(draw, np.where(both_bad, "both_bad", "tie"), "model_b"))

    names = models["name"]
    columns: dict[str, Any] = {
        "question_id": _hex(battles["question_id"]),
        "model_a": names[a].tolist(),
        "model_b": names[b].tolist(),
        "winner": winner.tolist(),
        "judge": [f"arena_user_{j}" for j in battles["judge"].tolist()],
        "tstamp": battles["tstamp"],
        "language": np.array(list(LANGUAGE_SHARES), dtype=object)[battles["language"]].tolist(),
        "turn": battles["turn"],
        "anony": np.ones(n_battles, dtype=bool),
        "category": np.array(list(CATEGORIES), dtype=object)[battles["category"]].tolist(),
    }
    frame = pl.DataFrame(columns, schema_overrides={"turn": pl.Int64})
    if texts:
        frame = frame.with_columns(
            _conversations(prompts, answer_texts, answers, side=0).alias("conversation_a"),
            _conversations(prompts, answer_texts, answers, side=1).alias("conversation_b"),
        )
    frame = frame.with_columns(_conv_metadata(counts_a, counts_b).alias("conv_metadata"))

    truth = _truth(
        seed=seed, model_seed=model_seed, n_battles=n_battles, texts=texts, models=models, battles=battles, gamma=gamma,
        tie_share=tie_share, d_mean=d_mean, d_sd=d_sd, style_logit=style_logit, winner=winner, encoding=encoding,
        options={
            **({"tie_model": "davidson", "nu": nu} if tie_model == "davidson" else {}),
            **({"judge_sd": judge_sd} if judge_sd else {}),
            **({"position_bias": position_bias} if position_bias else {}),
        },
    )
    return Simulation(battles=frame, truth=truth)


def simulate_in_parts(
    n_battles: int, n_models: int = 25, seed: int = 0, *, part_battles: int = 1_000_000, **options: Any,
) -> Iterator[Simulation]:
    """``n_battles`` votes as consecutive simulations of at most ``part_battles`` each, so that memory is bounded
    by one part: every part has the same models (drawn from ``seed``), part k the votes of ``seed + k`` (part 0
    is ``simulate(..., seed)`` itself when it holds every battle). Each part's truth z-scores its own style
    design. ``options``: those of :func:`simulate` except ``model_seed``."""
    if part_battles < 1:
        raise InputError("a part must hold at least 1 battle")
    for k, start in enumerate(range(0, n_battles, part_battles)):
        yield simulate(min(part_battles, n_battles - start), n_models, seed + k, model_seed=seed, **options)


def _hex(ids: np.ndarray) -> list[str]:
    """Each row of bytes as lowercase hex (vectorised: one string per row, no per-byte Python)."""
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    chars = np.empty((ids.shape[0], 2 * ids.shape[1]), dtype=np.uint8)
    chars[:, 0::2], chars[:, 1::2] = digits[ids >> 4], digits[ids & 15]
    return chars.view(f"S{chars.shape[1]}").ravel().astype(str).tolist()


def _conversations(prompts: list[list[str]], texts: list[str], answers: dict[str, np.ndarray], side: int) -> pl.Series:
    """Each battle's conversation on one side: user turns (the same on both sides) alternating with its answers."""
    mine = np.flatnonzero(answers["side"] == side)  # in battle, then turn order
    battle, turn = answers["battle"][mine].tolist(), answers["turn"][mine].tolist()
    messages = pl.DataFrame({
        "battle": np.repeat(answers["battle"][mine], 2),
        "role": ["user", "assistant"] * len(mine),
        "content": [
            text for b, t, j in zip(battle, turn, mine.tolist()) for text in (prompts[b][t], texts[j])
        ],
    })
    grouped = messages.group_by("battle", maintain_order=True).agg(pl.struct("role", "content").alias("conversation"))
    return grouped["conversation"]


def _conv_metadata(counts_a: Mapping[str, np.ndarray], counts_b: Mapping[str, np.ndarray]) -> pl.Series:
    """LMArena's ``conv_metadata`` object: sum_assistant_<s>_tokens, header_count_<s>, list_count_<s>,
    bold_count_<s> per side s."""
    fields = {}
    for side, counts in (("a", counts_a), ("b", counts_b)):
        fields[f"sum_assistant_{side}_tokens"] = pl.Series(counts["tokens"])
        fields[f"header_count_{side}"] = pl.DataFrame({f"h{i}": counts[f"h{i}"] for i in range(1, 7)}).to_struct()
        fields[f"list_count_{side}"] = pl.DataFrame(
            {"ordered": counts["ordered"], "unordered": counts["unordered"]}
        ).to_struct()
        fields[f"bold_count_{side}"] = pl.DataFrame(
            {"**": counts["bold_star"], "__": counts["bold_underscore"]}
        ).to_struct()
    return pl.DataFrame(fields).to_struct()


def _iso(fraction_of_period: float, battles: dict[str, np.ndarray]) -> str:
    seconds = START_TIMESTAMP + fraction_of_period * (battles["tstamp"][-1] - START_TIMESTAMP)
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _truth(
    *, seed: int, model_seed: int, n_battles: int, texts: bool, models: dict[str, np.ndarray],
    battles: dict[str, np.ndarray], gamma: dict[str, float], tie_share: float, d_mean: np.ndarray,
    d_sd: np.ndarray, style_logit: np.ndarray, winner: np.ndarray, encoding: str, options: dict[str, Any],
) -> dict[str, Any]:
    """The truth document; ``options``: the outcome options that differ from the defaults (absent otherwise, so
    that a default simulation writes what it always wrote)."""
    a, b = battles["model_a"], battles["model_b"]
    n_models = len(models["beta"])
    appearances = np.bincount(a, minlength=n_models) + np.bincount(b, minlength=n_models)
    signed = np.bincount(a, weights=style_logit, minlength=n_models) - np.bincount(b, weights=style_logit,
                                                                                   minlength=n_models)
    style_advantage = signed / np.maximum(appearances, 1)
    rank = np.empty(n_models, dtype=np.int64)
    rank[np.argsort(-models["beta"], kind="stable")] = np.arange(1, n_models + 1)
    levels = models["level_probs"]
    model_rows = []
    for i in np.argsort(rank):
        model_rows.append({
            "model": str(models["name"][i]),
            "beta": float(models["beta"][i]),
            "elo": float(1000 + ELO_PER_LOGIT * models["beta"][i]),
            "rank": int(rank[i]),
            "battles": int(appearances[i]),
            "mean_style_advantage_elo": float(ELO_PER_LOGIT * style_advantage[i]),
            "style": {
                "verbosity_tokens": float(models["verbosity"][i]),
                "headers_per_answer": float(models["header_rate"][i]),
                "header_level_shares": {f"h{k + 1}": float(levels[i, k]) for k in range(6)},
                "list_items_per_answer": float(models["list_rate"][i]),
                "ordered_share": float(models["ordered_share"][i]),
                "bold_per_answer": float(models["bold_rate"][i]),
                "underscore_bold_share": float(models["underscore_share"][i]),
                "bullet": str(models["bullet"][i]),
                "nested_lists": bool(models["nested_lists"][i]),
            },
            "available": {"from": _iso(models["start"][i], battles), "until": _iso(models["end"][i], battles)},
            "popularity": float(models["popularity"][i]),
        })
    outcome_shares = {o: float(np.mean(winner == o)) for o in ("model_a", "model_b", "tie", "both_bad")}
    return {
        "generator": GENERATOR,
        "version": GENERATOR_VERSION,
        "seed": seed,
        "model_seed": model_seed,
        "n_battles": n_battles,
        "n_models": n_models,
        "texts": texts,
        "token_encoding": encoding if texts else None,
        "scale": {
            "beta": "log-odds of winning, mean 0 over the models",
            "elo": "1000 + 400 / ln(10) * beta",
        },
        "models": model_rows,
        "style": {
            "features": list(META_COUNTS),
            "groups": {g: list(names) for g, names in STYLE_GROUPS.items()},
            "coefficients": gamma,
            "transform": (
                "side counts summed over the assistant turns (the conv_metadata of each line; tokens measured with "
                "the token_encoding per turn, or the sized length without texts); per group d = (a - b) / (a + b + 1)"
                " on the group sums; z = (d - d_mean) / d_sd over all battles of this file, population sd"
            ),
            "d_mean": dict(zip(STYLE_GROUPS, map(float, d_mean))),
            "d_sd": dict(zip(STYLE_GROUPS, map(float, d_sd))),
            "mean_style_advantage_elo": (
                "per model: the mean of sum_g gamma_g * z_g from the model's side over its battles, on the Elo "
                "scale; how far style alone pushes its wins, the pull an uncontrolled fit absorbs into its rating"
            ),
        },
        "outcome": {
            "model": "p = logistic(beta_a - beta_b + sum_g gamma_g * z_g" + (
                " + position_bias" if "position_bias" in options else ""
            ) + ")" + (
                " + taste[judge, a] - taste[judge, b], taste ~ normal(0, judge_sd) per judge and model"
                if "judge_sd" in options else ""
            ),
            "draws": (
                "Davidson: with s = logit(p), P(model_a) : P(draw) : P(model_b) = e^(s/2) : nu : e^(-s/2)"
                if options.get("tie_model") == "davidson" else
                "tau = tie_share * (1 - |2p - 1|); P(model_a) = p - tau/2, P(draw) = tau, P(model_b) = 1 - p - tau/2;"
                " counting a draw as half a win, E[y] = p exactly"
            ),
            "tie_share": tie_share,
            **options,
            "both_bad": (
                f"a draw is labelled both_bad with probability logistic({BOTH_BAD_INTERCEPT} - {BOTH_BAD_SLOPE} * "
                "(beta_a + beta_b) / 2), else tie"
            ),
            "shares": outcome_shares,
        },
        "pair_sampling": (
            f"per time bin (1/{TIME_BINS} of the period) each available model has weight popularity * (1 + "
            f"{NEW_MODEL_BOOST} * exp(-age / {NEW_MODEL_DECAY})) for models released during the period (age as a "
            "fraction of the period), popularity otherwise; model_a and model_b are drawn from these weights "
            "without repetition, then put on a random side"
        ),
        "period": {"from": _iso(0.0, battles), "until": _iso(1.0, battles)},
    }


def write_simulation(sim: Simulation, out_dir: Path, fmt: str = "jsonl") -> list[Path]:
    """Write ``battles.jsonl.gz`` (gzip with mtime 0: byte-identical for a seed) or ``battles.parquet``, and
    ``truth.json``, into ``out_dir`` (created if missing). Each file appears whole or not at all."""
    out_dir = writable_directory(Path(out_dir))
    if fmt == "jsonl":
        battles_path = out_dir / "battles.jsonl.gz"
        buffer = io.BytesIO()
        sim.battles.write_ndjson(buffer)
        compressed = gzip.compress(buffer.getvalue(), compresslevel=9, mtime=0)
        write_output(battles_path, lambda target: put_bytes(target, compressed))
    elif fmt == "parquet":
        battles_path = out_dir / "battles.parquet"
        write_output(battles_path, lambda tmp: sim.battles.write_parquet(tmp, compression="zstd"))
    else:
        raise InputError(f"unknown format {fmt!r}: use jsonl or parquet")
    truth_path = out_dir / "truth.json"
    truth = (json.dumps(sim.truth, indent=2, ensure_ascii=False) + "\n").encode()
    write_output(truth_path, lambda target: put_bytes(target, truth))
    return [battles_path, truth_path]
