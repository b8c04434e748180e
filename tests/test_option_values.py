"""Bad option values are usage errors (exit 2) on every command: each numeric option is found by walking the
typer app, so an option added later is covered (and must be declared with its rule, :func:`number`). The same
rules raise :class:`OptionError` (a ValueError) for Python callers."""

from __future__ import annotations

import math

import polars as pl
import pytest
import typer.main
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import arena_cli as arena
from arena_cli.bounds import Bounds
from arena_cli.cli import app
from arena_cli.commands.options import number, parse_pairs
from arena_cli.errors import ExitCode, OptionError

runner = CliRunner()
COMMANDS = typer.main.get_command(app).commands  # type: ignore[attr-defined]
CHECKED = type(number(Bounds("--x")))


def _numeric(param) -> bool:
    return getattr(param.type, "name", "") in ("integer", "float", "integer range", "float range")


NUMERIC = [(name, param) for name, command in sorted(COMMANDS.items()) for param in command.params if _numeric(param)]


def _outside(bounds: Bounds) -> list[str]:
    """Values just beyond each end (the end itself when it is open)."""
    step = 1 if bounds.integer else 0.5
    step = max(step, abs(bounds.high or 0) * 1e-6)  # (still a step at a bound of 10^12)
    values = []
    if bounds.low is not None:
        values.append(bounds.low if bounds.low_open else bounds.low - step)
    if bounds.high is not None:
        values.append(bounds.high if bounds.high_open else bounds.high + step)
    return [f"{v:.17g}" for v in values]


def _required(command, tmp_path) -> list[str]:
    """What the command needs besides the option under test: its arguments and required options (paths that do
    not exist, so that a value wrongly accepted fails later with another code), and a store that does not exist."""
    args: list[str] = []
    for param in command.params:
        if param.required:
            value = str(tmp_path / "missing.jsonl")
            args += [value] if param.param_type_name == "argument" else [param.opts[0], str(tmp_path / "out.json")]
    if any("--store" in param.opts for param in command.params):
        args += ["--store", str(tmp_path / "no-store")]
    return args


def test_every_numeric_option_has_a_rule_its_default_keeps():
    assert len(NUMERIC) >= 30  # fit, diff, compare, report, matrix, features, ingest, simulate
    unruled = [f"{name} {param.opts[0]}" for name, param in NUMERIC if not isinstance(param.type, CHECKED)]
    assert not unruled, f"declare these with click_type=number(Bounds(...)): {unruled}"
    for name, param in NUMERIC:
        assert param.default is None or param.type.bounds.accepts(param.default), (name, param.opts)


def test_help_shows_the_ranges():
    text = runner.invoke(app, ["fit", "--help"], terminal_width=200).output
    assert "0<x<1" in text and "x>=1" in text and "x>=0" in text


@pytest.mark.parametrize(("name", "param"), NUMERIC, ids=[f"{n}{p.opts[0]}" for n, p in NUMERIC])
def test_bad_numbers_are_usage_errors_naming_the_option(tmp_path, name, param):
    option = param.opts[0]
    for value in ["nan", "inf", "-inf", *_outside(param.type.bounds), *(["1.5"] if param.type.bounds.integer else [])]:
        result = runner.invoke(app, [name, *_required(COMMANDS[name], tmp_path), option, value])
        assert result.exit_code == ExitCode.USAGE, (name, option, value, result.output)
        errors = [line for line in result.output.splitlines() if line.startswith("Error")]
        assert len(errors) == 1 and f"'{option}'" in errors[0], result.output
        assert "Traceback" not in result.output
    assert not (tmp_path / "no-store").exists() and not (tmp_path / "out.json").exists()


@pytest.mark.parametrize(("args", "option"), [
    (["fit", "-s", "no-store", "--anchor", "m=inf"], "--anchor"),
    (["fit", "-s", "no-store", "--anchor", "m=nan"], "--anchor"),
    (["fit", "-s", "no-store", "--anchor", "m=1e13"], "--anchor"),  # (scores that large lose their decimals)
    (["fit", "-s", "no-store", "--anchor", "m"], "--anchor"),
    (["fit", "-s", "no-store", "--anchor", "a=1100", "--anchor", "b=1000"], "--anchor"),  # one score is pinned: which?
    (["diff", "-s", "no-store", "--anchor", "a=1100", "--anchor", "a=1100"], "--anchor"),
    (["matrix", "-s", "no-store", "--anchor", "a=1100", "--anchor", "b=1000"], "--anchor"),
    (["fit", "-s", "no-store", "--style", "none,length"], "--style"),
    (["compare", "a.json", "b.json", "--fail-on", "score-shift=nan"], "--fail-on"),
    (["compare", "a.json", "b.json", "--fail-on", "rank-shift=-inf"], "--fail-on"),
    (["simulate", "-o", "sim", "--style", "length=nan"], "--style"),
    (["simulate", "-o", "sim", "--style", "length"], "--style"),
    (["ingest", "votes.jsonl", "-s", "no-store", "--winner-map", "left"], "--winner-map"),
    (["info", "-s", "no-store", "--map", "=winner"], "--map"),
])
def test_malformed_values_the_library_parses_are_usage_errors(tmp_path, monkeypatch, args, option):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert f"Invalid value for '{option}'" in result.output and "Traceback" not in result.output
    assert not any(tmp_path.iterdir())  # nothing was written: the value is refused before any work


def _battles() -> pl.DataFrame:
    return pl.DataFrame({"model_a": ["a", "b", "c"] * 20, "model_b": ["b", "c", "a"] * 20, "outcome": ["model_a", "tie", "model_b"] * 20})


@pytest.mark.parametrize("options", [
    {"ridge": math.nan}, {"ridge": -1.0}, {"confidence": 1.5}, {"confidence": math.nan}, {"rounds": 0}, {"min_battles": -1},
    {"workers": 0}, {"seed": -1}, {"anchor": ("a", math.inf)}, {"anchor": "a=inf"}, {"anchor": "a"}, {"ties": "thirds"},
])
def test_python_callers_get_a_value_error(options):
    with pytest.raises(ValueError, match="--") as caught:
        arena.fit(_battles(), ci="none", **options)
    assert isinstance(caught.value, OptionError) and caught.value.exit_code == ExitCode.USAGE


def test_an_anchor_is_given_as_on_the_command_line_or_as_a_pair():
    battles = pl.DataFrame({"model_a": ["a", "b", "c"] * 20, "model_b": ["b", "c", "a"] * 20, "outcome": ["model_a", "tie", "tie"] * 20})
    by_text = arena.fit(battles, ci="none", min_battles=1, anchor="a=1200").leaderboard
    assert by_text.height == 3 and by_text.equals(arena.fit(battles, ci="none", min_battles=1, anchor=("a", 1200)).leaderboard)
    assert by_text.filter(model="a")["score"].item() == 1200


def test_python_callers_of_other_calls_get_a_value_error(tmp_path):
    from arena_cli.simulate import simulate

    calls = [
        lambda: arena.compare(tmp_path / "a.json", tmp_path / "b.json", fail_on=["score-shift=nan"]),
        lambda: arena.rank_diff(_battles(), "none,length", top_k=0, ci="none"),
        lambda: arena.ingest([tmp_path / "x.jsonl"], tmp_path / "s", lock_wait=math.nan),
        lambda: arena.update_features(tmp_path / "s", workers=0),
        lambda: simulate(10, 3, style_coefficients={"length": math.inf}),
        lambda: simulate(0, 3),
    ]
    for call in calls:
        with pytest.raises(OptionError):
            call()
    assert not (tmp_path / "s").exists()


@given(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([
    Bounds("--r", low=0), Bounds("--c", low=0, high=1, low_open=True, high_open=True), Bounds("--a"), Bounds("--h", high=10),
]))
def test_bounds_accept_exactly_the_finite_numbers_in_range(value, bounds):
    inside = math.isfinite(value) and (bounds.low is None or (value > bounds.low if bounds.low_open else value >= bounds.low)) and (
        bounds.high is None or (value < bounds.high if bounds.high_open else value <= bounds.high))
    assert bounds.accepts(value) == inside
    if not inside:
        with pytest.raises(OptionError, match=f"^{bounds.option}: "):
            bounds.check(value)


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_integer_bounds_take_integers_only(value):
    bounds = Bounds("--n", low=1, integer=True)
    assert bounds.accepts(value) == (value >= 1)
    assert not bounds.accepts(float(value)) and not bounds.accepts(True)


# ------------------------------------------------------------------------------------------ KEY=VALUE pairs

NAME = st.text(st.characters(blacklist_characters="=", blacklist_categories=("Cs",)), min_size=1).filter(str.strip)
ANY = st.text(st.characters(blacklist_categories=("Cs",)))


@given(NAME, ANY)
def test_map_splits_at_the_first_equals_sign(field, column):
    """--map FIELD=COLUMN: fields never hold '=', so a column name may."""
    assert parse_pairs([f"{field}={column}"], "--map") == {field.strip(): column.strip()}


@given(ANY.filter(lambda label: label.strip() and label.strip(" =")), NAME)
def test_winner_map_splits_at_the_last_equals_sign(label, outcome):
    """--winner-map LABEL=OUTCOME: outcomes never hold '=', so a label may (arena-hard's tie label A=B)."""
    assert parse_pairs([f"{label}={outcome}"], "--winner-map", last=True) == {label.strip(): outcome.strip()}


@given(st.lists(ANY, max_size=4), st.booleans())
def test_pairs_without_a_key_are_usage_errors(items, last):
    try:
        pairs = parse_pairs(items, "--map", last=last)
    except OptionError as error:
        assert error.option == "--map" and error.exit_code == ExitCode.USAGE
    else:
        assert all("=" in item for item in items) and len(pairs) <= len(items)


def test_a_winner_label_with_an_equals_sign_can_be_mapped(tmp_path):
    votes = tmp_path / "hard.csv"
    votes.write_text("model_a,model_b,score=label\nx,y,A=B\nx,y,A>B\ny,x,B>A\n")
    store = tmp_path / "s"
    result = runner.invoke(app, ["ingest", str(votes), "--store", str(store), "--map", "outcome=score=label",
                                 "--winner-map", "A=B=tie", "--winner-map", "A>B=model_a", "--winner-map", "B>A=model_b", "--strict"])
    assert result.exit_code == 0, result.output
    battles = arena.load_battles(store=store).battles.sort("source_row")
    assert battles["outcome"].to_list() == ["tie", "model_a", "model_b"]
