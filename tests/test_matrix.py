"""Pairwise battle counts, win rates and the wide matrix."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_cli.pairwise import model_order, pairwise_counts, wide_matrix
from arena_cli.results import PairwiseMatrix
from arena_cli.render import OutputFormat, render
from tests import compare_fixtures as fx

OUTCOMES = ("model_a", "model_b", "tie", "both_bad")


def test_counts_by_hand():
    battles = pl.DataFrame({
        "model_a": ["x", "x", "y", "x"],
        "model_b": ["y", "y", "x", "z"],
        "outcome": ["model_a", "tie", "model_a", "both_bad"],
    })
    pairs = pairwise_counts(battles)
    xy = pairs.filter((pl.col("model") == "x") & (pl.col("opponent") == "y")).row(0, named=True)
    assert (xy["battles"], xy["wins"], xy["ties"], xy["losses"]) == (3, 1, 1, 1)
    assert xy["win_rate"] == 0.5
    xz = pairs.filter((pl.col("model") == "x") & (pl.col("opponent") == "z")).row(0, named=True)
    assert (xz["wins"], xz["ties"], xz["win_rate"]) == (0, 1, 0.5)
    assert pairs.height == 4  # x-y, y-x, x-z, z-x


battle_rows = st.lists(
    st.tuples(st.sampled_from("abcde"), st.sampled_from("abcde"), st.sampled_from(OUTCOMES)).filter(lambda r: r[0] != r[1]),
    min_size=1, max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(battle_rows)
def test_counts_are_symmetric_and_complete(rows):
    battles = pl.DataFrame(rows, schema=["model_a", "model_b", "outcome"], orient="row")
    pairs = pairwise_counts(battles)
    mirrored = pairs.join(pairs, left_on=["model", "opponent"], right_on=["opponent", "model"], suffix="_r")
    assert mirrored.height == pairs.height
    assert (mirrored["battles"] == mirrored["battles_r"]).all()
    assert (mirrored["wins"] == mirrored["losses_r"]).all()
    assert ((mirrored["win_rate"] + mirrored["win_rate_r"] - 1.0).abs() < 1e-12).all()
    assert int(pairs["battles"].sum()) == 2 * len(rows)
    assert ((pairs["wins"] + pairs["ties"] + pairs["losses"]) == pairs["battles"]).all()


def test_wide_matrix_follows_order_and_leaves_diagonal_and_unmet_pairs_empty():
    battles = pl.DataFrame({"model_a": ["x", "y"], "model_b": ["y", "z"], "outcome": ["model_a", "model_b"]})
    pairs = pairwise_counts(battles)
    order = model_order(pairs)
    assert order == ["x", "z", "y"]  # overall win rate 1, 1, 0; ties by name
    wide = wide_matrix(pairs, "battles", order)
    assert wide.columns == ["model", "x", "z", "y"]
    assert wide.row(0) == ("x", None, None, 1)  # the diagonal, and x never met z
    assert wide["y"].to_list() == [1, 1, None]


def test_matrix_document_shapes():
    pairs = pairwise_counts(fx.battles())
    order = model_order(pairs)
    wide = PairwiseMatrix(pairs, tuple(order), "win_rate").to_document()
    assert wide.primary.frame.columns == ["model", *order]
    assert render(wide, OutputFormat.markdown).decode().count("—") == len(order)  # every pair met: only the diagonal
    long = PairwiseMatrix(pairs, tuple(order), "win_rate", long=True).to_document()
    assert render(long, OutputFormat.csv).decode().splitlines()[0] == "model,opponent,battles,wins,ties,losses,win_rate"
