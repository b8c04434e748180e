"""Fits whose numbers would mean nothing: a style term that is a function of the models (refused: its effect
cannot be told from the scores), and a style or position term that separates the outcomes (no finite estimate:
a warning while the scores stay determined, a refusal when they do not; bootstrap resamples that separate make an
interval unbounded, with one warning). Through the API and the CLI, on small generated logs."""

from __future__ import annotations

import json
import warnings

import numpy as np
import polars as pl
import pytest
from sim_battles import simulate
from typer.testing import CliRunner

import arena_cli
from arena_cli.cli import app
from arena_cli.errors import InputError
from arena_cli.models import design as D
from arena_cli.models.options import POSITION, FitOptions

runner = CliRunner()
MODELS = np.array([f"m{i}" for i in range(6)])


def battles(n: int = 3000, seed: int = 0) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """Random pairs in random order, outcomes from Bradley-Terry strengths (ties 10%): the frame and the codes of
    model_a and model_b."""
    rng = np.random.default_rng(seed)
    a = rng.integers(MODELS.size, size=n)
    b = (a + rng.integers(1, MODELS.size, size=n)) % MODELS.size
    beta = np.linspace(-1.0, 1.0, MODELS.size)
    u, p = rng.random(n), 1.0 / (1.0 + np.exp(-(beta[a] - beta[b])))
    outcome = np.where(u < 0.1, "tie", np.where(rng.random(n) < p, "model_a", "model_b"))
    return pl.DataFrame({"model_a": MODELS[a], "model_b": MODELS[b], "outcome": outcome}), a, b


def write(frame: pl.DataFrame, tmp_path, name: str = "votes.jsonl") -> str:
    path = tmp_path / name
    frame.write_ndjson(path)
    return str(path)


def one_line_error(result) -> str:
    assert result.exit_code == 3, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# ------------------------------------------------------------------------------ a term that is a function of the models


def per_model_lengths(seed: int = 0) -> pl.DataFrame:
    """Each model's answers always of one length (two lengths among six models): the length term of every battle
    is a per-model value of model_a minus that of model_b, up to the constant standardising subtracts."""
    frame, a, b = battles(seed=seed)
    tokens = np.array([100, 300, 100, 300, 300, 100])
    rng = np.random.default_rng(seed + 1)
    bold = {f"bold_{kind}_{side}": rng.integers(0, 4, a.size) for kind in ("star", "underscore") for side in "ab"}
    return frame.with_columns(tokens_a=tokens[a], tokens_b=tokens[b], **bold)


@pytest.mark.parametrize("ci", ["none", "sandwich", "bootstrap"])
@pytest.mark.parametrize("position_bias", [False, True])
def test_a_length_each_model_always_has_is_refused(ci, position_bias):
    """Before, the fit gave arbitrary scores (any split of the effect between length and the scores fits as well)
    and the sandwich's intervals came out NaN; now the term is named, whatever the intervals."""
    with pytest.raises(InputError, match="^style term length (and the position term )?(is|are) confounded with the models"):
        arena_cli.fit(per_model_lengths(), style="length,bold", ci=ci, rounds=20, position_bias=position_bias, min_battles=1)
    # the other term alone is fitted
    assert arena_cli.fit(per_model_lengths(), style="bold", ci="none", position_bias=position_bias, min_battles=1).coefficients.height


def test_a_baseline_design_with_per_model_lengths_is_refused():
    """arena-hard-auto's shape, every battle against one baseline: a per-model length is a function of the models
    whatever the lengths."""
    rng = np.random.default_rng(3)
    n, model = 2000, rng.integers(1, MODELS.size, size=2000)
    first = rng.random(n) < 0.5
    tokens = np.array([300, 120, 250, 410, 520, 60])
    frame = pl.DataFrame({
        "model_a": np.where(first, MODELS[0], MODELS[model]), "model_b": np.where(first, MODELS[model], MODELS[0]),
        "outcome": np.where(rng.random(n) < 0.5, "model_a", "model_b"),
        "tokens_a": np.where(first, tokens[0], tokens[model]), "tokens_b": np.where(first, tokens[model], tokens[0]),
    })
    with pytest.raises(InputError, match="style term length is confounded"):
        arena_cli.fit(frame, style="length", ci="sandwich", min_battles=1)


@pytest.mark.parametrize("normalize", [True, False])
def test_a_covariate_that_combines_with_another_into_a_function_of_the_models_is_refused(normalize):
    """A model-level covariate (a difference of per-model values) alone, and one that only together with another
    term is such a difference: both named."""
    frame, a, b = battles(seed=4)
    size = np.array([1.0, 7.0, 3.0, 13.0, 2.0, 5.0])
    noise = np.random.default_rng(5).normal(size=a.size)
    frame = frame.with_columns(size_diff=size[a] - size[b], noisy=noise, mixed=size[a] - size[b] - 2.0 * noise)
    with pytest.raises(InputError, match="^style term size_diff is confounded"):
        arena_cli.fit(frame, style="size_diff", ci="none", normalize=normalize, min_battles=1)
    with pytest.raises(InputError, match="^style terms noisy, mixed are confounded with the models.*fit without one of them$"):
        arena_cli.fit(frame, style="noisy,mixed", ci="none", normalize=normalize, min_battles=1)
    assert arena_cli.fit(frame, style="noisy", ci="none", normalize=normalize, min_battles=1).coefficients.height == 1


def test_a_nearly_dependent_term_is_fitted_with_wide_intervals():
    """Only an exact dependence is refused: a model-level covariate with a little noise is fitted (the refined
    Schur complement, computed from the residuals, is below the first test's margin but above the bound), and its
    interval is as wide as the little it varies within the models allows."""
    frame, a, b = battles(seed=6)
    size = np.array([1.0, 7.0, 3.0, 13.0, 2.0, 5.0])
    noise = np.random.default_rng(7).normal(size=a.size)
    nearly = frame.with_columns(size_diff=size[a] - size[b] + 1e-3 * noise, other=np.random.default_rng(8).normal(size=a.size))
    result = arena_cli.fit(nearly, style="size_diff,other", ci="sandwich", min_battles=1)
    lower, upper = result.coefficients.row(0)[2:]
    well = arena_cli.fit(nearly, style="other", ci="sandwich", min_battles=1)
    assert upper - lower > 20 * (well.coefficients["upper"][0] - well.coefficients["lower"][0])


def test_realistic_logs_are_not_refused():
    """The simulator's LMArena-like votes (models with style tendencies of their own), with every term and the
    position term: fitted, far from the bound (the design's smallest relative eigenvalue is about 0.2)."""
    frame, _ = simulate(4000, 12, seed=2, gamma={"length": 0.3, "bold": 0.1})
    result = arena_cli.fit(frame, style="both", position_bias=True, ci="sandwich")
    assert result.coefficients["feature"].to_list() == ["length", "header", "list", "bold", POSITION]
    assert not [w for w in result.warnings if "separates" in w or "confounded" in w]


def test_the_design_gram_is_the_same_in_any_slices(monkeypatch):
    """Sums over battles: computed a slice at a time (as parts would be), they are those of the whole."""
    frame = per_model_lengths().with_columns(weight=pl.Series(np.random.default_rng(9).integers(1, 4, 3000).astype(float)))
    prepared = D.prepare(frame, FitOptions(style="length,bold", min_battles=1))
    whole = D.design_gram(prepared, D.cells(prepared))
    monkeypatch.setattr(D, "_GRAM_ROWS", 77)
    sliced = D.design_gram(prepared, D.cells(prepared))
    for name in ("terms", "cross", "models", "span"):
        np.testing.assert_allclose(getattr(sliced, name), getattr(whole, name), rtol=1e-12, atol=1e-9)


def test_cli_refuses_a_term_that_is_a_function_of_the_models(tmp_path):
    path = write(per_model_lengths(), tmp_path)
    line = one_line_error(runner.invoke(app, ["fit", path, "--style", "length,bold", "--ci", "sandwich"]))
    assert line.startswith("error: style term length is confounded with the models") and line.endswith("fit without it")
    assert runner.invoke(app, ["fit", path, "--style", "bold", "--ci", "none"]).exit_code == 0
    line = one_line_error(runner.invoke(app, ["diff", path, "--variants", "none,length", "--ci", "none"]))
    assert "style term length is confounded" in line


# ------------------------------------------------------------------------------------------------ separation


def test_the_model_shown_first_always_winning_is_refused(tmp_path):
    """π ran to 37 with an interval of no width, and the scores to wherever Newton started: the position term
    decides every battle, so nothing on the board means anything."""
    frame, _, _ = battles(seed=10)
    first_wins = frame.with_columns(outcome=pl.lit("model_a"))
    with pytest.raises(InputError, match=r"^the position term separates the outcomes \(the model shown first wins every battle it decides\)"):
        arena_cli.fit(first_wins, position_bias=True, ci="sandwich", min_battles=1)
    assert np.isfinite(arena_cli.fit(first_wins, ci="none", min_battles=1).scores).all()  # without the term, a plain fit
    line = one_line_error(runner.invoke(app, ["fit", write(first_wins, tmp_path), "--position-bias"]))
    assert "the position term separates the outcomes" in line and line.endswith("fit without --position-bias")


def longer_always_wins(seed: int = 11) -> pl.DataFrame:
    frame, a, _ = battles(seed=seed)
    rng = np.random.default_rng(seed + 1)
    longer = frame.with_columns(tokens_a=rng.integers(50, 500, a.size), tokens_b=rng.integers(50, 500, a.size))
    longer = longer.filter(pl.col("tokens_a") != pl.col("tokens_b"))
    return longer.with_columns(outcome=pl.when(pl.col("tokens_a") > pl.col("tokens_b")).then(pl.lit("model_a")).otherwise(pl.lit("model_b")))


@pytest.mark.parametrize("option", ["--no-normalize", "--position-bias"])
def test_the_longer_answer_always_winning_is_refused(tmp_path, option):
    """The length term decides every battle (with the position term absorbing the constant standardising
    subtracts, both together): no score is left determined."""
    options = {"--no-normalize": {"normalize": False}, "--position-bias": {"position_bias": True}}[option]
    with pytest.raises(InputError, match=r"^style term 'length' (and the position term )?separates? the outcomes.*leave the scores undetermined"):
        arena_cli.fit(longer_always_wins(), style="length", ci="none", min_battles=1, **options)
    line = one_line_error(runner.invoke(app, ["fit", write(longer_always_wins(), tmp_path), "--style", "length", "--ci", "none", option]))
    assert "style term 'length'" in line and "separate" in line


def test_the_longer_answer_always_winning_standardised_is_warned_about():
    """Standardised and without a position term, the constant subtracted from every battle keeps the estimate
    finite but huge (it was 135 log-odds per sd, without a word): its information did not collapse, so it keeps
    its interval, but most battles are decided outright, and the warning says how many."""
    result = arena_cli.fit(longer_always_wins(), style="length", ci="sandwich", min_battles=1)
    (warning,) = [w for w in result.warnings if "outright" in w]
    assert warning.startswith("style term 'length' decides ")
    decided, total = (int(n.replace(",", "")) for n in warning.split("decides ")[1].split(" battles")[0].split(" of "))
    assert total == result.settings["n_battles"] and 0.8 * total < decided < total
    lower, upper = result.coefficients.row(0)[2:]
    assert lower is not None and upper is not None


def refusals(seed: int = 13) -> tuple[pl.DataFrame, pl.DataFrame]:
    """60 battles of 3000 where one side refused to answer (``refused``: +1 model_a, −1 model_b) and the refusing
    side always lost; and the other battles alone."""
    frame, a, _ = battles(seed=seed)
    rng = np.random.default_rng(seed)
    which = np.zeros(a.size)
    chosen = rng.choice(a.size, 60, replace=False)
    which[chosen] = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    frame = frame.with_columns(refused=which).with_columns(
        outcome=pl.when(pl.col("refused") > 0).then(pl.lit("model_b")).when(pl.col("refused") < 0).then(pl.lit("model_a")).otherwise("outcome"))
    return frame, frame.filter(pl.col("refused") == 0)


@pytest.mark.parametrize("ci", ["none", "sandwich", "bootstrap"])
def test_a_term_that_separates_some_battles_is_warned_about_and_the_scores_are_those_of_the_rest(ci):
    """A refusal indicator whose refusing side always lost: its coefficient has no finite estimate (it ran to −72
    with an interval of no width, and no warning); the scores are the maximum-likelihood fit of the battles it
    leaves open, which is a plain fit of the others, intervals included under the sandwich."""
    frame, rest = refusals()
    result = arena_cli.fit(frame, style="refused", normalize=False, ci=ci, rounds=50, workers=1, min_battles=1)
    (warning,) = [w for w in result.warnings if "separates" in w]
    assert warning.startswith("style term 'refused' separates the outcomes (of the battles it decides, model_a wins those where 'refused' is "
                              "low, model_b those where it is high), so its "
                              "coefficient has no finite estimate (the fit stopped: refused at -")
    assert "the scores rest on the 2,940 of 3,000 battles it leaves open" in warning
    assert result.coefficients.row(0)[2:] == (None, None)  # no interval for it
    plain = arena_cli.fit(rest, ci=ci if ci != "bootstrap" else "none", min_battles=1)
    np.testing.assert_allclose(result.beta, plain.beta, atol=1e-9)
    if ci == "sandwich":
        np.testing.assert_allclose(result.leaderboard["score_lower"], plain.leaderboard["score_lower"], atol=1e-6)


def test_a_term_running_off_with_a_separating_one_loses_its_interval_too():
    """Standardised, the indicator is shifted by its mean in every battle, so with a position term the position
    advantage runs off with it (by mean/sd of it): both are shown without an interval, the second named too."""
    frame, _ = refusals()
    result = arena_cli.fit(frame, style="refused", position_bias=True, ci="sandwich", min_battles=1)
    (warning,) = [w for w in result.warnings if "separates" in w]
    assert warning.endswith("which leave the coefficient of the position term undetermined too")
    assert result.coefficients["lower"].to_list() == [None, None]
    assert result.settings["position"]["lower"] is None and result.settings["position"]["upper"] is None


def test_resamples_that_separate_make_an_interval_unbounded_with_one_warning():
    """8 refusals, 7 lost: the battles give a finite estimate, but every resample that misses the one refusal that
    won separates its outcomes. Their draws count as −inf: the interval is unbounded below (it ended on a number
    those resamples made up), and one warning says how many there were."""
    frame, a, _ = battles(seed=14)
    which = np.zeros(a.size)
    which[:8] = 1.0
    outcome = frame["outcome"].to_numpy().copy()
    outcome[:8] = "model_b"
    outcome[0] = "model_a"
    rare = frame.with_columns(refused=which, outcome=pl.Series(outcome))
    result = arena_cli.fit(rare, style="refused", normalize=False, ci="bootstrap", rounds=200, workers=1, min_battles=1)
    (warning,) = [w for w in result.warnings if "resamples" in w and "no finite estimate" in w]
    count = int(warning.split(": ")[1].split(" of ")[0])
    assert 40 < count < 110 and " of 200 bootstrap resamples give it no finite estimate" in warning and warning.endswith("unbounded below")
    (coef, lower, upper) = result.coefficients.row(0)[1:]
    assert lower == -np.inf and np.isfinite(upper) and np.isfinite(coef)  # (null in JSON)
    assert np.isneginf(result.gamma_draws[:, 0]).sum() == count
    # the full fit is no separation: no warning of that kind, and the sandwich has an interval
    assert not [w for w in arena_cli.fit(rare, style="refused", normalize=False, ci="sandwich", min_battles=1).warnings if "separates" in w]


def test_cli_warns_on_stderr_and_leaves_the_interval_null(tmp_path):
    frame, _ = refusals()
    path = write(frame, tmp_path)
    result = runner.invoke(app, ["fit", path, "--style", "refused", "--no-normalize", "--ci", "sandwich", "--min-battles", "1", "-f", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    (row,) = document["tables"]["coefficients"]
    assert row["feature"] == "refused" and row["coef"] < -20 and row["lower"] is None and row["upper"] is None
    (warning,) = [w for w in document["meta"]["warnings"] if "separates" in w]
    assert f"warning: {warning}" in result.stderr.splitlines()
    shown = runner.invoke(app, ["fit", path, "--style", "refused", "--no-normalize", "--ci", "sandwich", "--min-battles", "1"])
    assert shown.exit_code == 0 and "[" not in next(line for line in shown.stdout.splitlines() if "refused" in line)


@pytest.mark.parametrize("ci", ["none", "sandwich", "bootstrap"])
def test_a_real_effect_with_a_far_outlier_is_no_separation(ci):
    """A covariate with a real effect (0.3 per unit) and one far outlier (2,000 units): its coefficient times its
    range is far beyond the bound, but its information did not collapse (the outlier's battle is decided, the
    others measure it). It keeps its estimate and its interval, with no warning; its resamples are not taken as
    running off either."""
    rng = np.random.default_rng(5)
    frame, a, b = battles(seed=5)
    x = rng.standard_normal(a.size)
    x[0] = 2000.0
    eta = np.linspace(-1.0, 1.0, MODELS.size)[a] - np.linspace(-1.0, 1.0, MODELS.size)[b] + 0.3 * x
    outcome = np.where(rng.random(a.size) < 1.0 / (1.0 + np.exp(-eta)), "model_a", "model_b")
    frame = frame.with_columns(outcome=pl.Series(outcome), x=x)
    result = arena_cli.fit(frame, style="x", normalize=False, ci=ci, rounds=200, workers=1, min_battles=1)
    assert not [w for w in result.warnings if "finite estimate" in w]
    coef, lower, upper = result.coefficients.row(0)[1:]
    assert 0.2 < coef < 0.4
    if ci != "none":
        assert lower is not None and upper is not None and lower < coef < upper and np.isfinite([lower, upper]).all()


def test_statsmodels_finding_no_finite_estimate_is_refused(tmp_path):
    """statsmodels answers separated outcomes with NaN parameters: the board was every score null, exit 0, and
    not a word. Now an input error that points to the solver that says which term."""
    with pytest.raises(InputError, match=r"^--solver statsmodels found no finite estimate"):
        arena_cli.fit(longer_always_wins(), style="length", solver="statsmodels", ci="none", min_battles=1, normalize=False)
    line = one_line_error(runner.invoke(app, ["fit", write(longer_always_wins(), tmp_path), "--style", "length", "--solver", "statsmodels",
                                              "--ci", "none", "--min-battles", "1"]))
    assert "--solver newton" in line


@pytest.mark.parametrize("outlier", [60.0, 80.0])
def test_resamples_of_a_real_effect_near_the_bound_are_not_taken_as_running_off(outlier):
    """One far outlier puts a real effect's coefficient near the size bound (16.5 and 21.5 log-odds over the
    range): sampling noise carries many resamples beyond it. They were set to +inf (an interval unbounded above,
    and a warning that they separate) just under the bound; a resample ran off only when far from the others."""
    rng = np.random.default_rng(0)
    a = rng.integers(MODELS.size, size=600)
    b = (a + rng.integers(1, MODELS.size, size=a.size)) % MODELS.size
    x = rng.normal(size=a.size)
    x[0] = outlier
    eta = np.linspace(-0.5, 0.5, MODELS.size)[a] - np.linspace(-0.5, 0.5, MODELS.size)[b] + 0.15 * x
    outcome = np.where(rng.random(a.size) < 1.0 / (1.0 + np.exp(-eta)), "model_a", "model_b")
    frame = pl.DataFrame({"model_a": MODELS[a], "model_b": MODELS[b], "outcome": outcome, "delay": x})
    result = arena_cli.fit(frame, style="delay", ci="bootstrap", rounds=300, workers=1, min_battles=1)
    assert not [w for w in result.warnings if "finite estimate" in w]
    assert np.isfinite(result.coefficients.row(0)[2:]).all()


def test_davidson_ties_with_a_separating_term():
    """The check of the information at p = 1/2 built a Bradley-Terry matrix for a Davidson problem (an internal
    error); a separating resample's runaway step overflowed Newton's convergence test (another)."""
    frame, rest = refusals()
    result = arena_cli.fit(frame, style="refused", normalize=False, ties="davidson", ci="bootstrap", rounds=20, workers=1, min_battles=1)
    (warning,) = [w for w in result.warnings if "separates" in w]
    assert "no finite estimate" in warning and result.coefficients.row(0)[2:] == (None, None)


def test_a_davidson_resample_whose_step_runs_off_is_no_internal_error():
    """arena-hard-auto's judgments of a few answers: markdown terms separate in many resamples, and a Davidson
    step that ran off overflowed Newton's convergence test (exit 1), and ν's end unbounded above overflowed exp."""
    data = "tests/fixtures/arena-hard/data"
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # (numpy's overflow in ν's unbounded end leaked to stderr)
        result = runner.invoke(app, ["fit", data, "-i", "arena-hard", "--answers", f"{data}/arena-hard-v0.1", "--style", "markdown", "--ties",
                                     "davidson", "--min-battles", "1", "--workers", "1", "--rounds", "100", "-f", "json"])
    assert result.exit_code == 0, result.output
    assert "bootstrap resamples give it no finite estimate" in result.stderr


def test_a_term_confounded_by_itself_is_named_alone_under_position_bias():
    """With --position-bias the term was named with the position term ("fit without one of them"), though the
    fit without the position term is refused too: the term alone is confounded (up to a constant)."""
    with pytest.raises(InputError, match=r"^style term length is confounded with the models.*fit without it$"):
        arena_cli.fit(per_model_lengths(), style="length,bold", ci="none", position_bias=True, min_battles=1)
