"""`arena simulate`: a vote log with known truth, to check what a leaderboard recovers."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from arena_cli.commands.options import number, parse_pairs
from arena_cli.models.options import SEED
from arena_cli.simulate.options import BATTLES, MODEL_SEED, MODELS, POSITION_BIAS


class SimulationFormat(str, Enum):
    jsonl = "jsonl"
    parquet = "parquet"


def simulate_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory for battles.jsonl.gz (or battles.parquet) and truth.json; created if missing.", show_default=False)],
    battles: Annotated[int, typer.Option("--battles", "-n", click_type=number(BATTLES), help="Number of battles (votes).")] = 20_000,
    models: Annotated[int, typer.Option("--models", click_type=number(MODELS), help="Number of models.")] = 25,
    seed: Annotated[int, typer.Option("--seed", click_type=number(SEED), help="Random seed: the same seed and options write byte-identical files.")] = 0,
    model_seed: Annotated[Optional[int], typer.Option("--model-seed", click_type=number(MODEL_SEED), help="Draw the models (strengths, styles, release windows) from this seed instead: same truth, new votes.", show_default=False)] = None,
    fmt: Annotated[SimulationFormat, typer.Option("--format", "-f", help="jsonl: gzip-compressed FastChat JSONL, one battle per line; parquet: the same columns.")] = SimulationFormat.jsonl,
    texts: Annotated[bool, typer.Option("--texts/--no-texts", help="Write the conversations; --no-texts writes only the per-side counts (conv_metadata), much faster.")] = True,
    style: Annotated[Optional[list[str]], typer.Option("--style", metavar="GROUP=COEF", help="True style coefficient of a group (length, header, list, bold), log-odds per sd; repeatable. Defaults: length=0.3 header=0.1 list=0.1 bold=0.12.", show_default=False)] = None,
    position_bias: Annotated[float, typer.Option("--position-bias", click_type=number(POSITION_BIAS), help="True advantage of the model shown first (model_a), log-odds added to every battle's.")] = 0.0,
) -> None:
    """Simulate votes with known truth: true strengths, style profiles and style effects, written with truth.json.

    Responses are markdown texts with known LMArena counts (code blocks hold look-alike lines that must not be
    counted); outcomes follow Bradley-Terry on strength plus style, so an uncontrolled leaderboard is pulled toward
    verbose, markdown-heavy models and a style-controlled one recovers the truth. Prints the written paths.
    """
    from arena_cli.console import err_console, write_stdout
    from arena_cli.io.atomic import writable_directory
    from arena_cli.simulate import simulate, write_simulation

    writable_directory(output)
    coefficients = parse_pairs(style, "--style")
    with err_console.status(f"simulating {battles:,} battles among {models} models"):
        sim = simulate(battles, models, seed, texts=texts, style_coefficients=coefficients, model_seed=model_seed, position_bias=position_bias)
        paths = write_simulation(sim, output, fmt.value)
    shares = sim.truth["outcome"]["shares"]
    err_console.print(
        f"wrote {battles:,} battles among {models} models (seed {seed}): "
        + ", ".join(f"{outcome} {share:.0%}" for outcome, share in shares.items()),
        highlight=False,
        soft_wrap=True,
    )
    write_stdout("".join(f"{path}\n" for path in paths).encode())
