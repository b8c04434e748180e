"""Hand-built leaderboards, coefficients and battles for the comparison, report and rendering tests.

Every number is written out, so the tables and golden files built from them never depend on a solver; the
CLI tests also use a small simulated store (`write_simulated_log`, `ingest_store`)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

MODELS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")
VARIANTS = {"none": "none", "length": "length", "markdown": "header,list,bold", "both": "length,header,list,bold"}

# Per variant: (model, score, half-width of the score interval, rank, rank_lower, rank_upper)
_BOARDS = {
    "none": [
        ("alpha", 1120.0, 15.0, 1, 1, 2), ("bravo", 1100.0, 14.0, 1, 1, 3), ("charlie", 1040.0, 12.0, 3, 2, 4),
        ("delta", 1000.0, 10.0, 4, 3, 5), ("echo", 950.0, 12.0, 5, 4, 6), ("foxtrot", 790.0, 20.0, 6, 6, 6),
    ],
    "length": [
        ("bravo", 1110.0, 15.0, 1, 1, 2), ("charlie", 1090.0, 14.0, 1, 1, 3), ("alpha", 1060.0, 12.0, 3, 2, 4),
        ("delta", 1010.0, 10.0, 4, 3, 5), ("foxtrot", 900.0, 20.0, 5, 5, 5), ("echo", 830.0, 12.0, 6, 5, 6),
    ],
    "markdown": [
        ("alpha", 1110.0, 15.0, 1, 1, 2), ("charlie", 1095.0, 14.0, 1, 1, 3), ("bravo", 1080.0, 12.0, 2, 1, 4),
        ("delta", 1005.0, 10.0, 4, 3, 5), ("echo", 920.0, 12.0, 5, 4, 6), ("foxtrot", 790.0, 20.0, 6, 6, 6),
    ],
    "both": [
        ("charlie", 1125.0, 15.0, 1, 1, 2), ("bravo", 1090.0, 14.0, 1, 1, 3), ("delta", 1040.0, 12.0, 3, 2, 4),
        ("alpha", 1010.0, 10.0, 4, 3, 5), ("foxtrot", 950.0, 20.0, 5, 4, 6), ("echo", 785.0, 12.0, 6, 6, 6),
    ],
}

_COEFFICIENTS = {
    "none": [],
    "length": [("length", 0.267, 0.221, 0.313)],
    "markdown": [("header", 0.044, 0.010, 0.078), ("list", 0.111, 0.070, 0.152), ("bold", 0.056, 0.020, 0.092)],
    "both": [("length", 0.249, 0.200, 0.298), ("header", 0.024, -0.010, 0.058), ("list", 0.031, -0.004, 0.066), ("bold", 0.019, -0.015, 0.053)],
}


def leaderboard(variant: str) -> pl.DataFrame:
    rows = _BOARDS[variant]
    return pl.DataFrame(
        {
            "rank": [r[3] for r in rows],
            "rank_lower": [r[4] for r in rows],
            "rank_upper": [r[5] for r in rows],
            "model": [r[0] for r in rows],
            "score": [r[1] for r in rows],
            "score_lower": [r[1] - r[2] for r in rows],
            "score_upper": [r[1] + r[2] for r in rows],
            "battles": [400] * len(rows),
            "wins": [180] * len(rows),
            "ties": [40] * len(rows),
            "losses": [180] * len(rows),
        },
        schema_overrides={"rank": pl.UInt32, "rank_lower": pl.UInt32, "rank_upper": pl.UInt32},
    )


def coefficients(variant: str) -> pl.DataFrame:
    rows = _COEFFICIENTS[variant]
    return pl.DataFrame(
        {"feature": [r[0] for r in rows], "coef": [r[1] for r in rows], "lower": [r[2] for r in rows], "upper": [r[3] for r in rows]},
        schema={"feature": pl.String, "coef": pl.Float64, "lower": pl.Float64, "upper": pl.Float64},
    )


def leaderboards() -> dict[str, pl.DataFrame]:
    return {v: leaderboard(v) for v in VARIANTS}


def all_coefficients() -> dict[str, pl.DataFrame]:
    return {v: coefficients(v) for v in VARIANTS}


def battles() -> pl.DataFrame:
    """A small battle log: every pair of the six models meets 1 to 4 times with mixed outcomes."""
    rows = []
    outcomes = ("model_a", "model_b", "tie", "model_a", "both_bad", "model_a", "model_b")
    k = 0
    for i, a in enumerate(MODELS):
        for j, b in enumerate(MODELS):
            if i >= j:
                continue
            for _ in range(1 + (i + j) % 4):
                rows.append((f"b{k:03d}", a, b, outcomes[k % len(outcomes)]))
                k += 1
    return pl.DataFrame(rows, schema=["battle_id", "model_a", "model_b", "outcome"], orient="row")


def write_simulated_log(directory: Path) -> Path:
    """A small simulated vote log with LMArena counts and no texts (fast): 8 models, 2,400 battles."""
    from arena_cli.simulate import simulate, write_simulation

    written = write_simulation(simulate(2400, 8, seed=11, texts=False), Path(directory))
    return next(p for p in written if p.name.startswith("battles"))


def ingest_store(log: Path, store: Path) -> None:
    from typer.testing import CliRunner

    from arena_cli.cli import app

    result = CliRunner().invoke(app, ["ingest", str(log), "--store", str(store)])
    assert result.exit_code == 0, result.output


def fit_document(variant: str) -> bytes:
    """A leaderboard file as `arena fit -o FILE.json` writes it, from a hand-built leaderboard."""
    from arena_cli.render import Document, OutputFormat, Table, render

    doc = Document("leaderboard", (Table("leaderboard", leaderboard(variant)), Table("coefficients", coefficients(variant))),
                   meta={"style": VARIANTS[variant], "seed": 1})
    return render(doc, OutputFormat.json)
