"""A reader that stops reading (``arena info | head -1``) is not an error: every command that writes to stdout
discards the rest of its output, says nothing about it, and exits with its own code (0, or 7 for a met
``compare`` gate), however much the reader took. Checked with real processes whose stdout is closed before
they write."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import arena_cli as arena
from tests import compare_fixtures as fx

REPO = Path(__file__).resolve().parents[1]
NOISE = ("Traceback", "Exception ignored", "BrokenPipe", "Broken pipe", "internal error")


def _commands(root: Path, log: Path, store: Path) -> dict[str, tuple[list[str], int]]:
    """Every command that writes to stdout, with the exit code it must keep."""
    model = arena.load_battles(store=store, columns=["model_a"]).battles["model_a"][0]
    without = f"model_a != '{model}' AND model_b != '{model}'"
    return {
        "info": (["info", "-s", str(store)], 0),  # rich tables
        "fit": (["fit", "-s", str(store), "--rounds", "100", "--workers", "1", "-f", "csv"], 0),  # rendered bytes
        "diff": (["diff", "-s", str(store), "--rounds", "100", "--workers", "1", "--variants", "none,length"], 0),
        "compare": (["compare", str(store), str(store), "--ci", "none", "--old-where", without, "--fail-on", "models-changed"], 7),
        "matrix": (["matrix", "-s", str(store)], 0),
        "features": (["features", "--list"], 0),
        "ingest": (["ingest", str(log), "-s", str(root / "ingested"), "-f", "json"], 0),
        "simulate": (["simulate", "-n", "50", "--no-texts", "-o", str(root / "sim")], 0),
        "export": (["export", "-s", str(store), "-o", "-", "-f", "csv"], 0),  # a file's bytes, copied
        "export to a device": (["export", "-s", str(store), "-o", "/dev/stdout", "-f", "jsonl"], 0),  # written in place
        "report to a device": (["report", "-s", str(store), "--rounds", "100", "--workers", "1", "-o", "/dev/stdout", "-f", "html"], 0),
        "version": (["--version"], 0),
        "help": (["fit", "--help"], 0),  # typer's own output
        "top help": (["--help"], 0),
        "store help": (["store", "check", "--help"], 0),
    }


def _closed_early(args: list[str], stderr_too: bool = False) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-m", "arena_cli", *args], cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT if stderr_too else subprocess.PIPE)
    assert process.stdout is not None
    process.stdout.close()  # before the command has written anything: its first write meets a closed pipe
    return process


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> dict[str, tuple[int, int, str]]:
    """The commands run at once (each start-up costs a second): name -> (expected code, code, stderr)."""
    root = tmp_path_factory.mktemp("pipes")
    log = fx.write_simulated_log(root / "log")
    store = root / "store"
    fx.ingest_store(log, store)
    running = {name: (code, _closed_early(args)) for name, (args, code) in _commands(root, log, store).items()}
    # stdout and stderr one closed pipe (``2>&1 | head``), and a warning to write (few rounds)
    running["fit-stderr-too"] = (0, _closed_early(["fit", "-s", str(store), "--rounds", "20", "--workers", "1"], stderr_too=True))
    running["usage-error-stderr-too"] = (2, _closed_early(["fit", "--no-such-option"], stderr_too=True))  # typer's usage error
    results = {}
    for name, (expected, process) in running.items():
        stderr = process.stderr.read().decode() if process.stderr else ""
        results[name] = (expected, process.wait(timeout=300), stderr)
    return results


@pytest.mark.parametrize("name", ["info", "fit", "diff", "compare", "matrix", "features", "ingest", "simulate", "export", "export to a device",
                                  "report to a device", "version", "fit-stderr-too", "help", "top help", "store help", "usage-error-stderr-too"])
def test_a_closed_stdout_ends_the_output_quietly_with_the_commands_own_code(finished, name):
    expected, code, stderr = finished[name]
    assert code == expected, stderr
    assert not any(noise in stderr for noise in NOISE), stderr


@pytest.mark.parametrize("name", ["export", "export to a device", "report to a device"])
def test_output_a_closed_stdout_did_not_take_is_not_said_to_be_written(finished, name):
    """The reader stopped reading: `wrote N rows to standard output` (or to /dev/stdout, or `wrote html report to
    /dev/stdout`) would be false, so nothing is said."""
    expected, code, stderr = finished[name]
    assert code == expected
    assert "wrote" not in stderr, stderr


def test_a_reader_that_stops_within_a_write_did_not_take_it():
    """A reader that closes the pipe partway through one large write does not raise there: the write comes back
    short. That output did not all go out either (export said it wrote every row of a file under 1 MB)."""
    code = "import sys; from arena_cli.console import write_stdout; print(write_stdout(b'x' * 4_000_000), file=sys.stderr)"
    writer = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert writer.stdout is not None and writer.stderr is not None
    assert writer.stdout.read(10) == b"x" * 10
    writer.stdout.close()
    assert writer.stderr.read().decode().split() == ["False"]
    assert writer.wait(timeout=60) == 0
