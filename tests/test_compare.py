"""Variants side by side and leaderboard-vs-leaderboard comparison, on hand-built leaderboards."""

from __future__ import annotations

import json

import polars as pl
import pytest

from arena_cli import comparison as compare
from arena_cli.errors import InputError, OptionError
from arena_cli.render import Document, OutputFormat, Table, render
from tests import compare_fixtures as fx


def comparison(**kwargs) -> compare.VariantComparison:
    return compare.compare_variants(fx.leaderboards(), fx.all_coefficients(), fx.VARIANTS, **kwargs)


# ----------------------------------------------------------------------------------------------- variants


def test_parse_variants_default_and_custom_sets():
    assert compare.parse_variants(compare.DEFAULT_VARIANTS) == {"none": "none", "length": "length", "markdown": "markdown", "both": "both"}
    assert compare.parse_variants("none, length+bold, lb=length + list") == {"none": "none", "length+bold": "length,bold", "lb": "length,list"}


@pytest.mark.parametrize("text", ["", " , ", "none,none", "x=", "=length", "a=b=length", "none=length", "length=markdown", "both=length"])
def test_parse_variants_rejects_bad_lists(text):
    """A malformed list is a malformed argument: OptionError (a ValueError; exit 2), whatever the battles."""
    with pytest.raises(OptionError, match="--variants"):
        compare.parse_variants(text)


def test_a_built_in_variant_may_be_named_only_for_its_own_features():
    assert compare.parse_variants("none=none, markdown=header+list+bold") == {"none": "none", "markdown": "header,list,bold"}


def test_rank_diff_changes_are_baseline_minus_variant_and_sorted_by_last_variant():
    diff = comparison().rank_diff
    assert diff["model"].to_list() == ["charlie", "bravo", "delta", "alpha", "foxtrot", "echo"]
    row = diff.filter(pl.col("model") == "alpha").row(0, named=True)
    assert (row["rank_none"], row["rank_both"], row["rank_change_both"]) == (1, 4, -3)
    charlie = diff.filter(pl.col("model") == "charlie").row(0, named=True)
    assert charlie["rank_change_both"] == 2 and charlie["rank_change_length"] == 2
    assert "rank_change_none" not in diff.columns and "shifted_none" not in diff.columns
    assert diff.schema["rank_change_both"] == pl.Int64  # unsigned engine ranks must not wrap around


def test_shift_is_significant_only_when_intervals_do_not_overlap():
    diff = comparison().rank_diff
    shifted = {v: set(diff.filter(pl.col(f"shifted_{v}"))["model"]) for v in ("length", "markdown", "both")}
    # alpha: [1, 2] under none, [3, 5] under both; foxtrot: [6, 6] then [5, 5] under length.
    assert shifted == {"length": {"foxtrot"}, "markdown": set(), "both": {"alpha"}}


def test_rank_diff_sort_options():
    assert comparison(sort_by="model").rank_diff["model"].to_list() == sorted(fx.MODELS)
    assert comparison(sort_by="none").rank_diff["model"].to_list() == ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    with pytest.raises(OptionError, match="--sort"):
        comparison(sort_by="nope")
    with pytest.raises(OptionError, match="--baseline"):
        comparison(baseline="nope")


def test_coefficient_table_is_the_seed_shape():
    coefs = comparison().coefficients
    assert coefs["variant"].to_list() == ["length", "markdown", "both"]
    assert [c for c in coefs.columns if not c.endswith(("_lower", "_upper"))] == ["variant", "length", "header", "list", "bold"]
    both = coefs.filter(pl.col("variant") == "both").row(0, named=True)
    assert (both["length"], both["length_lower"], both["length_upper"]) == (0.249, 0.200, 0.298)
    assert coefs.filter(pl.col("variant") == "length")["header"].to_list() == [None]


def test_coefficient_table_without_style_variants_is_empty():
    frame = compare.variant_coefficient_frame({"none": fx.coefficients("none")})
    assert frame.height == 0 and frame.columns == ["variant"]


def test_highlights_list_significant_shifts_and_top_k_moves():
    lights = comparison(top_k=2).highlights
    rows = set(lights.select("variant", "model", "change").iter_rows())
    assert ("both", "alpha", "significant drop") in rows
    assert ("length", "foxtrot", "significant rise") in rows
    assert ("both", "charlie", "entered top 2") in rows and ("both", "alpha", "left top 2") in rows
    assert ("length", "charlie", "entered top 2") in rows and ("length", "alpha", "left top 2") in rows
    assert not any(v == "none" for v, _, _ in rows)


def test_baseline_alone_gives_empty_changes_and_highlights():
    single = compare.compare_variants({"none": fx.leaderboard("none")}, {"none": fx.coefficients("none")}, {"none": "none"})
    assert single.rank_diff["model"].to_list() == list(fx.MODELS) and single.highlights.height == 0
    assert render(single.to_document(), OutputFormat.markdown)


def test_top_k_must_be_positive():
    with pytest.raises(OptionError, match="--top-k"):
        comparison(top_k=0)


def test_diff_document_has_three_tables_and_plain_changes_in_markdown():
    doc = comparison().to_document()
    assert [t.name for t in doc.tables] == ["rank_diff", "coefficients", "highlights"]
    markdown = render(doc, OutputFormat.markdown).decode()
    assert "| alpha | 1 | 1–2 | 1120.0 |" in markdown
    assert "**-3**" in markdown  # alpha's significant drop under both, in bold
    assert "↑" not in markdown and "↓" not in markdown


def test_json_is_deterministic_and_keeps_full_precision():
    first = render(comparison().to_document(), OutputFormat.json)
    assert first == render(comparison().to_document(), OutputFormat.json)
    payload = json.loads(first)
    assert payload["kind"] == "diff" and list(payload["meta"]) == ["settings", "filters", "inputs", "versions", "warnings"]
    assert payload["tables"]["coefficients"][0]["length"] == 0.267


# ------------------------------------------------------------------------------------ two leaderboards


def changes(old="none", new="both") -> pl.DataFrame:
    return compare.leaderboard_changes(fx.leaderboard(old), fx.leaderboard(new))


def test_changes_mark_entered_and_left_models():
    old = fx.leaderboard("none").filter(pl.col("model") != "echo")
    new = fx.leaderboard("both").filter(pl.col("model") != "alpha")
    frame = compare.leaderboard_changes(old, new)
    status = dict(frame.select("model", "status").iter_rows())
    assert status["echo"] == "entered" and status["alpha"] == "left" and status["bravo"] == "kept"
    assert frame["model"].to_list()[-1] == "alpha"  # models that left come last


def test_changes_beyond_intervals():
    frame = changes()
    alpha = frame.filter(pl.col("model") == "alpha").row(0, named=True)
    assert alpha["rank_change"] == -3 and alpha["rank_beyond_interval"] is True
    assert alpha["score_change"] == -110.0 and alpha["score_beyond_interval"] is True
    bravo = frame.filter(pl.col("model") == "bravo").row(0, named=True)
    assert bravo["rank_beyond_interval"] is False and bravo["score_beyond_interval"] is False


@pytest.mark.parametrize(
    ("text", "gate"),
    [("rank-shift=3", compare.Gate("rank-shift", 3.0)), ("score-shift=12.5", compare.Gate("score-shift", 12.5)),
     ("top-k-change=5", compare.Gate("top-k-change", 5.0)), ("significant-shift", compare.Gate("significant-shift")),
     (" models-changed ", compare.Gate("models-changed"))],
)
def test_parse_gate(text, gate):
    assert compare.parse_gate(text) == gate


@pytest.mark.parametrize("text", ["rank-shift", "rank-shift=0", "rank-shift=1.5", "top-k-change=x", "models-changed=1", "drift=2", "score-shift=-1",
                                  "score-shift=nan", "score-shift=inf", "score-shift=0", "rank-shift=inf", "rank-shift=-inf", "top-k-change=nan"])
def test_parse_gate_rejects(text):
    with pytest.raises(OptionError, match="--fail-on"):
        compare.parse_gate(text)


def met(gate: str, old="none", new="both") -> tuple[bool, str]:
    table = compare.evaluate_gates([compare.parse_gate(gate)], changes(old, new))
    return table["met"][0], table["models"][0]


def test_gate_rank_shift_threshold_is_inclusive():
    assert met("rank-shift=3") == (True, "alpha 1→4")
    assert met("rank-shift=4") == (False, "")


def test_gate_score_shift():
    hit, models = met("score-shift=160")
    assert hit and models == "foxtrot +160.0, echo -165.0"  # in new leaderboard order
    assert not met("score-shift=166")[0]


def test_gate_top_k_change_ignores_reorders_within_the_top():
    # none -> both: top 2 {alpha, bravo} -> {charlie, bravo}.
    assert met("top-k-change=2") == (True, "+charlie, -alpha")
    # markdown -> none: top 3 {alpha, charlie, bravo} in another order -> same set.
    assert met("top-k-change=3", old="markdown", new="none") == (False, "")


def test_gate_significant_shift_and_models_changed():
    assert met("significant-shift") == (True, "alpha 1→4")
    assert met("significant-shift", old="none", new="markdown") == (False, "")
    assert met("models-changed") == (False, "")
    frame = compare.leaderboard_changes(fx.leaderboard("none"), fx.leaderboard("both").filter(pl.col("model") != "echo"))
    table = compare.evaluate_gates([compare.parse_gate("models-changed")], frame)
    assert table.row(0) == ("models-changed", True, "-echo")


def test_gate_significant_shift_needs_intervals():
    """A leaderboard fitted with --ci none has no rank intervals: the condition could never be met, so a CI gate
    built on it would pass whatever changed."""
    bare = fx.leaderboard("none").with_columns(pl.lit(None, dtype=pl.Int64).alias(c) for c in ("rank_lower", "rank_upper"))
    with pytest.raises(InputError, match="needs rank intervals"):
        compare.evaluate_gates([compare.parse_gate("significant-shift")], compare.leaderboard_changes(bare, fx.leaderboard("both")))
    assert compare.evaluate_gates([compare.parse_gate("rank-shift=3")], compare.leaderboard_changes(bare, fx.leaderboard("both")))["met"][0]


def test_comparison_document_and_summary():
    result = compare.compare_leaderboards(fx.leaderboard("none"), fx.leaderboard("both"), [compare.parse_gate("rank-shift=2")], "last week", "this week")
    assert result.failed == ["rank-shift=2"]
    summary = result.summary()
    assert summary["largest_rank_shift"] == 3 and summary["significant_shifts"] == 1 and summary["entered"] == []
    doc = result.to_document()
    assert [t.name for t in doc.tables] == ["changes", "gates"]
    assert json.loads(render(doc, OutputFormat.json))["meta"]["summary"]["failed_gates"] == ["rank-shift=2"]


def _fit_document(board: pl.DataFrame) -> Document:
    return Document("fit", (Table("leaderboard", board), Table("coefficients", fx.coefficients("length"))), meta={"settings": {"style": "length", "seed": 1}})


def test_load_leaderboard_round_trips_fit_outputs(tmp_path):
    board = fx.leaderboard("length")
    (tmp_path / "fit.json").write_bytes(render(_fit_document(board), OutputFormat.json))
    (tmp_path / "fit.parquet").write_bytes(render(_fit_document(board), OutputFormat.parquet))
    (tmp_path / "fit.csv").write_bytes(render(_fit_document(board), OutputFormat.csv))
    expected = board.select(compare.COMPARED_COLUMNS).with_columns(pl.col("rank", "rank_lower", "rank_upper").cast(pl.Int64))
    for name in ("fit.json", "fit.parquet", "fit.csv"):
        frame, settings = compare.load_leaderboard(tmp_path / name)
        assert frame.columns == board.columns, name  # every column kept (win rates are compared too)
        assert frame.select(compare.COMPARED_COLUMNS).with_columns(pl.col("rank", "rank_lower", "rank_upper").cast(pl.Int64)).equals(expected), name
    assert compare.load_leaderboard(tmp_path / "fit.json")[1] == {"style": "length", "seed": 1}


def test_win_rates_against_a_baseline_are_compared_when_both_boards_have_them():
    old, new = fx.leaderboard("none"), fx.leaderboard("length")
    rates = {"win_rate": 0.4, "win_rate_lower": 0.3, "win_rate_upper": 0.5}
    with_rates = [board.with_columns(pl.lit(v + shift).alias(c) for c, v in rates.items()) for board, shift in ((old, 0.0), (new, 0.1))]
    changes = compare.leaderboard_changes(*with_rates)
    kept = changes.filter(pl.col("status") == "kept")
    assert kept["win_rate_change"].to_list() == pytest.approx([0.1] * kept.height)
    assert {"win_rate_lower_old", "win_rate_upper_new"} <= set(changes.columns)
    assert "win_rate_change" not in compare.leaderboard_changes(with_rates[0], new).columns  # one side has none


def test_load_leaderboard_errors(tmp_path):
    with pytest.raises(InputError, match="no such leaderboard"):
        compare.load_leaderboard(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(InputError, match="cannot read"):
        compare.load_leaderboard(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text(json.dumps({"tables": {"x": [{"a": 1}]}}))
    with pytest.raises(InputError, match="no leaderboard table"):
        compare.load_leaderboard(tmp_path / "other.json")
    (tmp_path / "board.txt").write_text("x")
    with pytest.raises(InputError, match=r"\.json, \.parquet or \.csv"):
        compare.load_leaderboard(tmp_path / "board.txt")


def test_settings_mismatch():
    assert compare.settings_mismatch({"style": "none", "ties": "half"}, {"style": "both", "ties": "half"}) == ["style"]


def test_paired_rank_changes_use_the_same_resample_in_every_variant():
    from types import SimpleNamespace

    import numpy as np

    models = ("a", "b", "c")
    # Draw r of both variants comes from resample r: b is always exactly one place better under "both",
    # although its rank alone wanders over 1..3 in either variant.
    base = np.array([[1, 3, 2], [2, 3, 1], [3, 2, 1], [1, 3, 2]] * 10)
    styled = base.copy()
    styled[:, 1] -= 1  # (the other models' ranks do not enter b's change)
    results = {"none": SimpleNamespace(models=models, rank_draws=base), "both": SimpleNamespace(models=models, rank_draws=styled)}
    intervals = compare.paired_rank_changes(results, "none", 0.95)
    b = intervals["both"].filter(pl.col("model") == "b").row(0, named=True)
    assert (b["lower"], b["upper"]) == (1, 1)
    assert compare.paired_rank_changes({"none": SimpleNamespace(models=models, rank_draws=None)}, "none", 0.95) == {}


def test_rank_diff_carries_change_intervals_when_given():
    bounds = pl.DataFrame({"model": list(fx.MODELS), "lower": [-4, 0, 1, 0, -2, 0], "upper": [-2, 1, 3, 2, 0, 3]})
    diff = compare.rank_diff_frame(fx.leaderboards(), "none", change_intervals={"both": bounds})
    assert diff.filter(pl.col("model") == "alpha").select("rank_change_both", "rank_change_lower_both", "rank_change_upper_both").row(0) == (-3, -4, -2)
    assert "rank_change_lower_length" not in diff.columns


# ------------------------------------------------------------------- rank changes among the common models


def _board_from_draws(models: list[str], draws):
    """A leaderboard as a fit writes it from score draws: score, percentile interval, LMArena rank, rank range."""
    import numpy as np

    from arena_cli.models.uncertainty import lmarena_rank, percentile_interval, rank_interval, ranks_of

    lower, upper = percentile_interval(draws, 0.95)
    best, worst = rank_interval(ranks_of(draws), 0.95)
    return pl.DataFrame({
        "rank": lmarena_rank(lower, upper), "rank_lower": best, "rank_upper": worst, "model": models,
        "score": draws.mean(axis=0), "score_lower": lower, "score_upper": upper,
    }).sort("score", descending=True), compare.ScoreDraws(tuple(models), draws, 0.95)


def _draws(centres, seed=0, sd=12.0):
    import numpy as np

    rng = np.random.default_rng(seed)
    return np.asarray(centres, dtype=float)[None, :] + rng.normal(0.0, sd, size=(400, len(centres)))


SIX = ["m1", "m2", "m3", "m4", "m5", "m6"]
CENTRES = [1100.0, 1080.0, 1040.0, 1000.0, 960.0, 900.0]


@pytest.mark.parametrize("with_draws", [True, False], ids=["draws", "saved-ranges"])
def test_models_entering_above_move_no_one(with_draws):
    """Three new models far above the six: every old model drops three places on the new board, its score and
    its rank among the six unchanged. No rank condition may fire; models-changed does."""
    import numpy as np

    base = _draws(CENTRES)
    old, old_draws = _board_from_draws(SIX, base)
    entered = np.hstack([_draws([1400.0, 1350.0, 1300.0], seed=1), base])
    new, new_draws = _board_from_draws(["n1", "n2", "n3", *SIX], entered)
    assert new.filter(pl.col("model") == "m6")["rank_lower"].item() == old.filter(pl.col("model") == "m6")["rank_lower"].item() + 3
    gates = [compare.parse_gate(g) for g in ("rank-shift=1", "significant-shift", "models-changed")]
    draws = (old_draws, new_draws) if with_draws else (None, None)
    result = compare.compare_leaderboards(old, new, gates, old_draws=draws[0], new_draws=draws[1])
    assert result.failed == ["models-changed"]
    kept = result.changes.filter(pl.col("status") == "kept")
    assert kept["rank_change"].to_list() == [0] * 6 and not kept["rank_beyond_interval"].any()
    assert kept["common_rank_lower_new"].to_list() == kept["common_rank_lower_old"].to_list()
    assert result.summary()["common_ranks_from"] == ("score draws" if with_draws else "saved rank ranges")


def test_scores_are_compared_on_one_scale():
    """Strong newcomers lower every score of a mean-centred fit by the same amount without anything changing among
    the models both boards have: score-shift stays quiet, the offset is reported; a real move still fires."""
    import numpy as np

    base = _draws(CENTRES)
    old, _ = _board_from_draws(SIX, base)
    entered = np.hstack([_draws([1400.0, 1350.0, 1300.0], seed=1), base])
    recentred = entered - (entered.mean() - 1000.0)  # as a fit's mean-1000 gauge puts them
    new, _ = _board_from_draws(["n1", "n2", "n3", *SIX], recentred)
    gates = [compare.parse_gate("score-shift=1")]
    result = compare.compare_leaderboards(old, new, gates)
    assert result.failed == [] and result.summary()["score_offset"] == pytest.approx(-(entered.mean() - 1000.0))
    assert result.changes.filter(pl.col("status") == "kept")["score_change"].abs().max() < 1e-9
    moved = recentred.copy()
    moved[:, -1] += 30.0
    shifted = compare.compare_leaderboards(old, _board_from_draws(["n1", "n2", "n3", *SIX], moved)[0], gates)
    assert shifted.failed == ["score-shift=1"] and "m6" in shifted.gates["models"].item()
    anchored = {"old": {"anchor": {"model": "m1", "score": 1100.0}}, "new": {"anchor": {"model": "m1", "score": 1100.0}}}
    pinned = compare.compare_leaderboards(old, new, gates, settings=anchored)  # one anchor: one scale already
    assert pinned.summary()["score_offset"] == 0.0 and pinned.failed == ["score-shift=1"]


def test_the_note_gives_the_offset_with_the_sign_json_has():
    """score_change = new - score_offset - old: the note quotes score_offset as the field has it (it said the new
    board was shifted by the offset's opposite, which read as the offset with the other sign)."""
    import re

    old = fx.leaderboard("none")
    new = old.with_columns(pl.col("score", "score_lower", "score_upper") - 12.5)
    result = compare.compare_leaderboards(old, new)
    assert result.summary()["score_offset"] == -12.5
    note = next(n for n in result.to_document().table("changes").notes if n.startswith("Δ score"))
    assert "new - old - score_offset" in note and re.search(r"score_offset, (\S+) points", note).group(1) == "-12.5"


def test_an_offset_or_change_that_rounds_to_zero_is_written_without_a_sign():
    """Two boards a hair apart (floating-point noise in the last bits): csv and the table show 0.0, never -0.0."""
    old = fx.leaderboard("none")
    new = old.with_columns(pl.col("score", "score_lower", "score_upper") - 1e-9)
    document = compare.compare_leaderboards(old, new).to_document()
    assert document.table("changes").frame["score_offset"][0] < 0
    csv = pl.read_csv(render(document, OutputFormat.csv), infer_schema=False)
    assert set(csv["score_offset"]) == {"0.0"} and set(csv["score_change"]) == {"0.0"}
    shown = render(document, OutputFormat.markdown).decode()
    assert "-0.0" not in shown


@pytest.mark.parametrize("with_draws", [True, False], ids=["draws", "saved-ranges"])
def test_a_real_shift_among_common_models_still_fires(with_draws):
    """m6 climbs from last to first among the six while a model leaves: the rank conditions fire for it."""
    old, old_draws = _board_from_draws([*SIX, "gone"], _draws([*CENTRES, 1500.0]))
    moved = [*CENTRES[:5], 1200.0]
    new, new_draws = _board_from_draws(SIX, _draws(moved, seed=2))
    gates = [compare.parse_gate(g) for g in ("rank-shift=3", "significant-shift")]
    draws = (old_draws, new_draws) if with_draws else (None, None)
    result = compare.compare_leaderboards(old, new, gates, old_draws=draws[0], new_draws=draws[1])
    assert result.failed == ["rank-shift=3", "significant-shift"]
    rank_shift, significant = result.gates["models"].to_list()
    assert rank_shift == "m6 6→1; ranks among the 6 models both have"
    assert significant.startswith("m6 6→1, ")  # (and the models it passed, each pushed down a place)


def test_common_ranks_from_saved_ranges_can_only_widen():
    """Without draws, a model not shared whose interval overlaps lowers only the best bound."""
    board = pl.DataFrame({
        "rank": [1, 1, 3], "rank_lower": [1, 2, 3], "rank_upper": [2, 2, 3], "model": ["x", "a", "b"],
        "score": [1010.0, 1005.0, 900.0], "score_lower": [995.0, 990.0, 890.0], "score_upper": [1025.0, 1020.0, 910.0],
    })
    ranks = compare.common_ranks(board, ["a", "b"])
    assert ranks.rows() == [("a", 1, 1, 2), ("b", 2, 2, 2)]  # x overlaps a: only its best bound may move; x is wholly above b


@pytest.mark.parametrize("call", ["rank_diff", "report"])
def test_the_api_refuses_a_baseline_outside_the_variants_before_reading(tmp_path, call):
    """A ValueError of the arguments, raised before the (missing) file is looked at."""
    import arena_cli as arena

    with pytest.raises(OptionError, match="--baseline: 'both' is not one of the variants") as raised:
        getattr(arena, call)(tmp_path / "no-such-log.jsonl", "none,length", baseline="both")
    assert isinstance(raised.value, ValueError)


def test_the_api_names_what_is_wrong_with_the_variants(tmp_path):
    """No variant at all was reported as a baseline outside them; the default baseline missing from the variants
    blamed an option the user never gave."""
    import arena_cli as arena

    with pytest.raises(OptionError, match="--variants: give at least one variant"):
        arena.rank_diff(tmp_path / "no-such-log.jsonl", {})
    with pytest.raises(OptionError, match=r"--baseline: 'none' \(the default baseline: add it to --variants, or give --baseline\)"):
        arena.rank_diff(tmp_path / "no-such-log.jsonl", "length,both")


def test_the_api_matrix_values_are_option_errors_and_take_the_command_line_spelling():
    import arena_cli as arena

    with pytest.raises(OptionError, match="--value: 'nope'"):
        arena.matrix("sample_data/battles.jsonl.gz", value="nope")
    assert arena.matrix("sample_data/battles.jsonl.gz", value="win-rate").value == "win_rate"
