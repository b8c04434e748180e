"""Battles -> fit arrays: outcome coding, style features, weights, exclusions, sufficient statistics."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_cli.errors import InputError, NoDataError, OptionError
from arena_cli.models import design as D
from arena_cli.models.engine import fit_variants
from arena_cli.models.options import BothBad, FitOptions, Ties, parse_anchor, parse_style


def frame(rows, **extra):
    data = {"model_a": [r[0] for r in rows], "model_b": [r[1] for r in rows], "outcome": [r[2] for r in rows]}
    data.update(extra)
    return pl.DataFrame(data)


ROUND_ROBIN = [("a", "b", "model_a"), ("b", "c", "model_a"), ("c", "a", "model_a"), ("a", "c", "tie"), ("b", "a", "both_bad")]


def test_outcome_codes_and_tie_rules():
    half = D.prepare(frame(ROUND_ROBIN), FitOptions(min_battles=1))
    assert half.models == ("a", "b", "c")
    per_battle = sorted(zip(half.a.tolist(), half.b.tolist(), half.outcome.tolist()))
    assert per_battle == [(0, 1, 2), (0, 2, 1), (1, 0, 1), (1, 2, 2), (2, 0, 2)]  # plain fits keep one row per pair and outcome
    assert half.count.tolist() == [1.0] * 5 and half.n_battles == 5
    drop_bb = D.prepare(frame(ROUND_ROBIN), FitOptions(min_battles=1, both_bad=BothBad.drop))
    assert drop_bb.n_battles == 4
    drop_ties = D.prepare(frame(ROUND_ROBIN + [("b", "a", "model_a")]), FitOptions(min_battles=1, ties=Ties.drop))
    assert np.repeat(drop_ties.outcome, drop_ties.count.astype(int)).tolist() == [2, 2, 2, 2]  # both_bad goes with the ties


def test_plain_fits_count_identical_battles_once_per_pair_and_outcome():
    rows = [("a", "b", "model_a")] * 3 + [("b", "a", "model_a")] * 2 + [("a", "b", "tie"), ("a", "b", "model_a")]
    prepared = D.prepare(frame(rows), FitOptions(min_battles=1))
    assert list(zip(prepared.a.tolist(), prepared.b.tolist(), prepared.outcome.tolist(), prepared.count.tolist())) == [
        (0, 1, 1, 1.0), (0, 1, 2, 4.0), (1, 0, 2, 2.0)]
    assert D.record_counts(D.cells(prepared), prepared.n_models)["wins"].tolist() == [4, 2]
    styled = D.prepare(frame(rows, score=list(range(7))), FitOptions(min_battles=1, style="score"))
    assert styled.n_rows == styled.n_battles == 7


@pytest.mark.parametrize("normalize", [True, False])
def test_style_terms_that_combine_others_are_refused(normalize):
    """Terms whose effects cannot be told apart (the same count under two names; one a combination of others):
    any split of their joint effect fits as well, and the sandwich's information matrix has no inverse."""
    rows = ROUND_ROBIN * 6
    x = [float((i * 7) % 5) for i in range(len(rows))]
    y = [float((i * 3) % 4) for i in range(len(rows))]
    battles = frame(rows, s1=x, s2=[2 * v + (3 if normalize else 0) for v in x], s3=y, s4=[u - 2 * v for u, v in zip(x, y)])
    for style, involved in (("s1,s2", "s1, s2"), ("s1,s3,s4", "s1, s3, s4"), ("s2,s1,s3", "s2, s1")):
        with pytest.raises(InputError, match=f"style terms {involved} are collinear"):
            fit_variants(battles, {"v": style}, FitOptions(min_battles=1, ci="none", normalize=normalize))
    fitted = fit_variants(battles, {"v": "s1,s3"}, FitOptions(min_battles=1, ci="none", normalize=normalize))
    assert fitted["v"].coefficients["feature"].to_list() == ["s1", "s3"]
    # terms collinear only across variants (each fit takes one of them) are no such combination
    apart = fit_variants(battles, {"one": "s1", "two": "s2"}, FitOptions(min_battles=1, ci="none", normalize=normalize))
    one, two = (apart[v].coefficients["coef"][0] for v in ("one", "two"))
    assert one == pytest.approx(two if normalize else 2 * two, rel=1e-6, abs=1e-12)  # standardised, the same term


def test_plain_fits_count_votes_per_cell_as_each_part_is_encoded():
    rows = [("a", "b", "model_a")] * 3 + [("b", "a", "model_a")] * 2 + [("a", "b", "tie"), ("a", "b", "model_a")]
    encoded = D.Encoder(FitOptions(min_battles=1))(frame(rows).lazy()).collect()
    assert encoded.height == 3 and encoded[D.COUNT].sum() == 7
    whole = D.prepare(frame(rows), FitOptions(min_battles=1))
    parts = D.prepare(D.Encoded([D.Encoder(FitOptions(min_battles=1))(frame(part).lazy()) for part in (rows[:4], rows[4:])]), FitOptions(min_battles=1))
    assert (parts.a.tolist(), parts.b.tolist(), parts.outcome.tolist(), parts.count.tolist()) == (
        whole.a.tolist(), whole.b.tolist(), whole.outcome.tolist(), whole.count.tolist())
    assert not D.Encoder(FitOptions(style="score")).counts_votes and not D.Encoder(FitOptions(method="elo")).counts_votes


def test_bad_outcomes_and_missing_columns_are_input_errors():
    with pytest.raises(InputError, match="^3 battle"):
        D.prepare(frame([("a", "b", "left")] * 3 + [("a", "b", "tie")]), FitOptions(min_battles=1))
    with pytest.raises(InputError, match="no model_a, model_b or outcome"):
        D.prepare(frame([("a", "b", None), ("a", "b", "tie")]), FitOptions(min_battles=1))
    with pytest.raises(InputError, match="no 'outcome' column"):
        D.prepare(pl.DataFrame({"model_a": ["a"], "model_b": ["b"]}), FitOptions())
    with pytest.raises(InputError, match="--cluster"):
        D.prepare(frame(ROUND_ROBIN), FitOptions(cluster="judge"))


def test_self_battles_are_left_out_with_a_warning():
    prepared = D.prepare(frame(ROUND_ROBIN + [("a", "a", "tie")]), FitOptions(min_battles=1))
    assert prepared.n_battles == 5
    assert any("self-battle" in w for w in prepared.warnings)


def test_min_battles_excludes_iteratively_with_reasons():
    rows = ROUND_ROBIN * 3 + [("a", "d", "model_b"), ("d", "b", "tie")]
    prepared = D.prepare(frame(rows), FitOptions(min_battles=3))
    assert prepared.models == ("a", "b", "c")
    assert [e.model for e in prepared.excluded] == ["d"]
    assert "fewer than 3 battles" in prepared.excluded[0].reason
    with pytest.raises(NoDataError, match="fewer than two models") as raised:
        D.prepare(frame(rows), FitOptions(min_battles=100))
    assert str(raised.value).endswith("; lower --min-battles to keep models with fewer battles)")
    with pytest.raises(NoDataError) as raised:  # no threshold to lower: the reason says so
        D.prepare(frame([("a", "b", "model_a")] * 5), FitOptions(min_battles=1))
    assert str(raised.value) == "fewer than two models left to rank (excluded: a: it never lost or tied, so its score has no finite maximum-likelihood value)"


@pytest.mark.parametrize(
    "extra, model, reason",
    [
        ([("d", "a", "model_a"), ("d", "b", "model_a")], "d", "never lost"),
        ([("d", "a", "model_b"), ("b", "d", "model_a")], "d", "never won"),
        ([("d", "e", "model_a"), ("e", "d", "model_a")], "d", "not connected"),
    ],
)
def test_models_without_a_finite_mle_are_excluded(extra, model, reason):
    prepared = D.prepare(frame(ROUND_ROBIN + extra), FitOptions(min_battles=1))
    assert model not in prepared.models
    excluded = {e.model: e.reason for e in prepared.excluded}
    assert reason in excluded[model]


def test_a_group_that_only_wins_is_excluded_as_a_group():
    # d and e beat each other, and both beat a: their joint strength relative to {a, b, c} is unbounded
    extra = [("d", "e", "model_a"), ("e", "d", "model_a"), ("d", "a", "model_a"), ("e", "b", "model_a")]
    prepared = D.prepare(frame(ROUND_ROBIN + extra), FitOptions(min_battles=1))
    assert prepared.models == ("a", "b", "c")
    assert all("won every comparison" in e.reason for e in prepared.excluded)


def test_style_transform_is_lmarenas_then_population_zscore():
    tokens_a, tokens_b = [10, 100, 5, 0, 50], [30, 100, 0, 7, 20]
    battles = frame(ROUND_ROBIN, tokens_a=tokens_a, tokens_b=tokens_b)
    raw = (np.array(tokens_a) - np.array(tokens_b)) / (np.array(tokens_a) + np.array(tokens_b) + 1.0)
    prepared = D.prepare(battles, FitOptions(style="length", min_battles=1))
    assert prepared.feature_names == ("length",)
    np.testing.assert_allclose(prepared.features[0], (raw - raw.mean()) / raw.std(), rtol=1e-12)
    plain = D.prepare(battles, FitOptions(style="length", min_battles=1, normalize=False))
    np.testing.assert_allclose(plain.features[0], raw, rtol=1e-12)


def test_style_groups_sum_their_members_per_side():
    zeros = [0] * 5
    battles = frame(ROUND_ROBIN, h1_a=[1, 0, 2, 0, 0], h1_b=zeros, h2_a=[0, 1, 0, 0, 3], h2_b=[1, 1, 0, 0, 0],
                    **{f"h{k}_{s}": zeros for k in range(3, 7) for s in "ab"})
    prepared = D.prepare(battles, FitOptions(style="header", min_battles=1, normalize=False))
    a, b = np.array([1, 1, 2, 0, 3.0]), np.array([1, 1, 0, 0, 0.0])
    np.testing.assert_allclose(prepared.features[0], (a - b) / (a + b + 1))


def test_user_covariates_battle_level_and_per_side():
    battles = frame(ROUND_ROBIN, sentiment=[0.5, -0.2, 0.1, 0.0, 0.3], stars_a=[1, 2, 3, 4, 5], stars_b=[5, 4, 3, 2, 1])
    prepared = D.prepare(battles, FitOptions(style="sentiment,stars", min_battles=1, normalize=False))
    assert prepared.feature_names == ("sentiment", "stars")
    np.testing.assert_allclose(prepared.features[0], [0.5, -0.2, 0.1, 0.0, 0.3])
    np.testing.assert_allclose(prepared.features[1], (np.arange(1, 6) - np.arange(5, 0, -1)) / 7.0)
    signed = frame(ROUND_ROBIN, mood_a=[-1, 0, 1, 0, 0], mood_b=[0] * 5)
    with pytest.raises(InputError, match="needs counts"):
        D.prepare(signed, FitOptions(style="mood", min_battles=1))
    with pytest.raises(InputError, match="no tokens_a, tokens_b columns"):
        D.prepare(frame(ROUND_ROBIN), FitOptions(style="length", min_battles=1))
    with pytest.raises(InputError, match="not numeric"):
        D.prepare(frame(ROUND_ROBIN, note=["x"] * 5), FitOptions(style="note", min_battles=1))


def test_per_side_counts_given_as_text_are_read_as_numbers():
    """A JSON or CSV log keeps extra columns as text: counts in it fit like numbers; text that is not a number, or a
    value of a type that is no number (a boolean), is an input error, not a silently missing feature. A column of
    such a type that is all null (as validation leaves it, having rejected every row that gave a value) is no count,
    as an absent one is: no error about its type (which stopped a fit of a file whose ingest kept its other rows)."""
    numbers = frame(ROUND_ROBIN, tokens_a=[10, 20, 30, 40, 50], tokens_b=[50, 40, 30, 20, 10])
    as_text = numbers.with_columns(pl.col("tokens_a", "tokens_b").cast(pl.String).str.pad_start(4))
    options = FitOptions(style="length", min_battles=1)
    np.testing.assert_array_equal(D.prepare(as_text, options).features, D.prepare(numbers, options).features)
    garbled = as_text.with_columns(pl.when(pl.int_range(pl.len()) == 2).then(pl.lit("many")).otherwise(pl.col("tokens_b")).alias("tokens_b"))
    with pytest.raises(InputError, match="negative or not numbers"):
        D.prepare(garbled, options)
    with pytest.raises(InputError, match="negative or not numbers"):
        D.prepare(numbers.with_columns(pl.col("tokens_a").cast(pl.Boolean)), options)
    with pytest.raises(NoDataError, match="none of the 5 battle.s. has what the style features length are computed from"):
        D.prepare(numbers.with_columns(pl.lit(None, pl.Time).alias("tokens_a")), options)


def test_the_encoder_tells_whether_every_battle_has_its_counts():
    """A count missing for one battle (a file whose counts have a gap: computed from its texts instead) is told
    apart from a count that is not a number (an input error later) and from a user covariate's gap."""
    counts = frame(ROUND_ROBIN, tokens_a=["1", "2", "3", "4", "5"], tokens_b=["5", "4", "3", "2", "1"], mood=[0.1, None, 0.3, 0.4, 0.5])
    encode = D.Encoder(FitOptions(style="length,mood"))
    assert encode.counted(encode(counts))
    gap = counts.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise(pl.col("tokens_a")).alias("tokens_a"))
    assert not encode.counted(encode(gap))
    assert not encode.counted(encode(gap.lazy()).collect())
    garbled = counts.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(pl.lit("many")).otherwise(pl.col("tokens_a")).alias("tokens_a"))
    assert encode.counted(encode(garbled))
    mood = D.Encoder(FitOptions(style="mood"))
    assert mood.counted(mood(gap))


def test_battles_without_features_are_left_out_and_constant_features_dropped():
    battles = frame(ROUND_ROBIN + [("a", "b", "model_b")], tokens_a=[1, 2, 3, 4, 5, None], tokens_b=[2, 2, 2, 2, 2, 2],
                    bold_star_a=[0] * 6, bold_star_b=[0] * 6, bold_underscore_a=[0] * 6, bold_underscore_b=[0] * 6)
    prepared = D.prepare(battles, FitOptions(style="length,bold", min_battles=1))
    assert prepared.n_battles == 5
    assert prepared.feature_names == ("length",)
    assert any("without style features" in w for w in prepared.warnings)
    assert any("'bold' is constant" in w for w in prepared.warnings)


def test_reweighting_is_inverse_pair_frequency_with_mean_one():
    rows = [("a", "b", "model_a")] * 120 + [("b", "a", "model_b")] * 30 + [("a", "c", "tie")] * 10 + [("c", "b", "model_a"), ("b", "c", "model_a")]
    prepared = D.prepare(frame(rows), FitOptions(min_battles=1))
    w = np.repeat(D.pair_weights(D.cells(prepared)), prepared.count.astype(int))
    assert w.mean() == pytest.approx(1.0)
    raw = np.array([1 / 150] * 150 + [1 / 50] * 10 + [1 / 50] * 2)
    np.testing.assert_allclose(np.sort(w), np.sort(raw / raw.mean()))


def test_cells_and_aggregated_design_keep_every_battle():
    rng = np.random.default_rng(0)
    names = np.array(list("abcde"))
    rows = [(names[i], names[(i + 1 + j) % 5], o) for i, j, o in zip(rng.integers(0, 5, 400), rng.integers(0, 4, 400), rng.choice(["model_a", "model_b", "tie"], 400))]
    prepared = D.prepare(frame(rows), FitOptions(min_battles=1))
    cells = D.cells(prepared)
    assert cells.size.sum() == prepared.n_battles
    lower = np.minimum(prepared.a, prepared.b)
    np.testing.assert_array_equal(cells.pair_a[cells.pair[cells.of_battle]], lower)
    from_lower = np.where(prepared.a == lower, prepared.outcome, 2 - prepared.outcome)
    np.testing.assert_array_equal(cells.outcome[cells.of_battle], from_lower)
    plain = D.design(prepared, cells)
    assert plain.aggregated and plain.n_rows == cells.n_cells <= 3 * 5 * 4 // 2
    counts = D.record_counts(D.cells(prepared), prepared.n_models)
    assert (counts["wins"] + counts["ties"] + counts["losses"] == counts["battles"]).all()
    assert counts["battles"].sum() == 2 * prepared.n_battles


def test_clustered_aggregation_keeps_cluster_structure():
    rows = ROUND_ROBIN * 4
    judges = [f"j{i % 3}" for i in range(len(rows))]
    prepared = D.prepare(frame(rows, judge=judges), FitOptions(min_battles=1, cluster="judge"))
    design = D.design(prepared, D.cells(prepared))
    assert design.row_count.sum() == prepared.n_battles
    assert set(design.row_cluster.tolist()) == {0, 1, 2}


def test_intervals_by_one_cluster_are_refused_and_by_few_warned_about():
    """From one cluster every resample is the data itself: intervals of no width, which looked certain."""
    rows = ROUND_ROBIN * 4
    with pytest.raises(InputError, match="fall in 1 cluster"):
        D.prepare(frame(rows, judge=["j"] * len(rows)), FitOptions(min_battles=1, cluster="judge"))
    assert D.prepare(frame(rows, judge=["j"] * len(rows)), FitOptions(min_battles=1, cluster="judge", ci="none")).warnings == ()
    few = D.prepare(frame(rows, judge=[f"j{i % 3}" for i in range(len(rows))]), FitOptions(min_battles=1, cluster="judge"))
    assert few.warnings == ("--cluster judge: intervals from only 3 clusters are rough (they vary with the few clusters drawn)",)
    with pytest.raises(OptionError, match="give the name of a column"):
        FitOptions(cluster=" ")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.sampled_from(["model_a", "model_b", "tie", "both_bad"])), min_size=1, max_size=60))
def test_every_kept_model_has_a_finite_mle(rows):
    """Property: after exclusion the credit graph is strongly connected (Zermelo's condition), or there is no fit."""
    battles = frame([(f"m{a}", f"m{b}", o) for a, b, o in rows])
    try:
        prepared = D.prepare(battles, FitOptions(min_battles=1))
    except NoDataError:
        return
    edges = D.credit_edges(prepared.a, prepared.b, prepared.outcome, prepared.n_models)
    everyone = np.ones(prepared.n_models, dtype=bool)
    assert D.strongly_connected(edges, prepared.n_models, everyone)
    assert D.mle_components(edges, prepared.n_models, everyone)[0].all()
    assert prepared.n_models + len(prepared.excluded) == len({m for a, b, _ in rows if a != b for m in (a, b)})


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30))))
def test_dense_connectivity_check_agrees_with_scipy(graph):
    n, pairs = graph
    edges = np.unique(np.array([i * n + j for i, j in pairs if i != j], dtype=np.int64))
    involved = np.zeros(n, dtype=bool)
    involved[[i for p in pairs for i in p if p[0] != p[1]]] = True
    if not involved.any():
        return
    main, _, _ = D.mle_components(edges, n, involved)
    assert D.strongly_connected(edges, n, involved) == bool(main[involved].all())


def test_style_and_anchor_parsing():
    assert parse_style("none") == ()
    assert parse_style("both") == ("length", "header", "list", "bold")
    assert parse_style(" length, sentiment ,length") == ("length", "sentiment")
    with pytest.raises(OptionError):
        parse_style(" , ")
    with pytest.raises(OptionError):
        parse_style("none,length")
    assert parse_anchor("mixtral-8x7b-instruct-v0.1=1114") == ("mixtral-8x7b-instruct-v0.1", 1114.0)
    assert parse_anchor("a=b=1000.5") == ("a=b", 1000.5)
    for bad in ("mixtral", "=1000", "m=high", "m=nan", "m=inf", "m=-inf"):
        with pytest.raises(OptionError, match="--anchor"):
            parse_anchor(bad)


def test_compat_preset_fills_only_unset_options():
    from arena_cli.models.options import CIMethod, Compat

    plain = FitOptions(compat=Compat.arena_rank).resolved()
    assert (plain.reweight, plain.ridge, plain.ci, plain.min_battles) == (False, 0.0, CIMethod.sandwich, 1)
    styled = FitOptions(style="both", compat=Compat.arena_rank, ci=CIMethod.bootstrap).resolved()
    assert (styled.reweight, styled.ridge, styled.ci) == (True, 1.0, CIMethod.bootstrap)
    default = FitOptions(style="both").resolved()
    assert (default.reweight, default.ridge, default.ci, default.min_battles) == (False, 0.0, CIMethod.bootstrap, 50)
    for bad in (dict(confidence=1.0), dict(rounds=0), dict(ridge=-1.0), dict(min_battles=0), dict(workers=0)):
        with pytest.raises(OptionError):
            FitOptions(**bad).resolved()


def test_options_accept_plain_strings_for_choices():
    from arena_cli.models.options import CIMethod, Compat, Solver

    options = FitOptions(ties="davidson", both_bad="drop", ci="sandwich", solver="statsmodels", compat="arena-rank", anchor=["m", 1114])
    assert (options.ties, options.both_bad, options.ci, options.solver, options.compat) == (
        Ties.davidson, BothBad.drop, CIMethod.sandwich, Solver.statsmodels, Compat.arena_rank)
    assert options.anchor == ("m", 1114.0)
    with pytest.raises(OptionError, match="--ties: 'thirds': expected one of half, drop, davidson"):
        FitOptions(ties="thirds")


@pytest.mark.parametrize("style", ["none", "both"])
def test_battles_in_parts_fit_exactly_as_one_frame(style):
    """A store is read part by part: model codes, clusters and resamples must not depend on where parts split,
    even when a part lacks some models and the parts order models differently."""
    from sim_battles import simulate

    from arena_cli.models import fit
    from arena_cli.models.options import CIMethod

    frame, _ = simulate(3000, 6, seed=4, n_judges=30)
    frame = frame.with_columns(pl.format("judge-{}", pl.col("judge")).alias("judge"))
    late = frame["model_a"].is_in(["m0", "m5"]) | frame["model_b"].is_in(["m0", "m5"])
    parts = [frame.filter(~late).lazy(), frame.filter(late), frame.head(0).lazy()]
    whole = pl.concat([frame.filter(~late), frame.filter(late)])
    options = FitOptions(style=style, ci=CIMethod.bootstrap, rounds=20, cluster="judge", workers=1)
    from_parts, from_whole = fit(parts, options), fit(whole, options)
    assert from_parts.leaderboard.equals(from_whole.leaderboard)
    assert from_parts.coefficients.equals(from_whole.coefficients)
    assert np.array_equal(from_parts.rank_draws, from_whole.rank_draws)


def test_no_parts_or_only_empty_ones_is_no_data():
    with pytest.raises(NoDataError):
        D.prepare([], FitOptions())
    empty = pl.DataFrame(schema={"model_a": pl.String, "model_b": pl.String, "outcome": pl.String})
    with pytest.raises(NoDataError):
        D.prepare([empty.lazy(), empty], FitOptions())


def test_series_of_many_parts_fill_an_array_part_by_part():
    parts = [pl.Series("x", [1.5, None]), pl.Series("x", [], dtype=pl.Float64), pl.Series("x", [-2.0, 3.0, 4.0])]
    series = pl.concat(parts, rechunk=False)
    assert series.n_chunks() > 1  # (polars drops the empty part)
    out = D.into_array(series, np.full(5, 7.0))
    np.testing.assert_array_equal(out, [1.5, np.nan, -2.0, 3.0, 4.0])
    codes = pl.concat([pl.Series([2, 0], dtype=pl.UInt32), pl.Series([1, 2], dtype=pl.UInt32)], rechunk=False)
    lookup = np.array([10, 20, 30], dtype=np.int32)
    np.testing.assert_array_equal(D.into_array(codes, np.empty(4, dtype=np.int32), lookup), [30, 10, 20, 30])
