"""Output files: an ``-o`` that cannot be written is an input error (exit 3) naming the path, found before any
work and never leaving a half-written file; empty exports keep their header; CSV keeps values verbatim."""

from __future__ import annotations

import csv
import errno
import io
import json
import os
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.errors import ExitCode, InputError
from arena_cli.io.atomic import write_output
from arena_cli.schema import QUARANTINE_SCHEMA
from tests import compare_fixtures as fx

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sim")
    fx.ingest_store(fx.write_simulated_log(root), root / "store")
    return root / "store"


#: Every command that writes a file, with what it needs besides -o (a store that does not exist: the -o check
#: comes first, before any reading).
FILE_COMMANDS = {
    "fit": ["fit", "-s", "no-store"],
    "diff": ["diff", "-s", "no-store"],
    "compare": ["compare", "old.json", "new.json"],
    "matrix": ["matrix", "-s", "no-store"],
    "info": ["info", "-s", "no-store"],
    "features": ["features", "-s", "no-store", "-f", "csv"],
    "report": ["report", "-s", "no-store"],
    "export": ["export", "-s", "no-store", "-f", "csv"],
}


def _one_error_line(result, path: Path) -> None:
    assert result.exit_code == ExitCode.INPUT, result.output
    assert result.output.count("\n") == 1 and result.output.startswith("error: cannot write") and str(path) in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", sorted(FILE_COMMANDS))
@pytest.mark.parametrize("case", ["directory", "missing directory", "under a file"])
def test_an_output_that_cannot_be_written_is_named_before_any_work(tmp_path, monkeypatch, command, case):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "a-file").write_text("x")
    target = {"directory": tmp_path / "a-dir", "missing directory": tmp_path / "nowhere" / "out.csv",
              "under a file": tmp_path / "a-file" / "out.csv"}[case]
    result = run(*FILE_COMMANDS[command], "-o", target)
    _one_error_line(result, target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-dir", "a-file"] and not any((tmp_path / "a-dir").iterdir())


@pytest.mark.parametrize("target", ["a-file", "a-file/sim"])
def test_simulate_needs_a_directory_it_can_write_into(tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("x")
    result = run("simulate", "-n", "10", "-o", target)
    assert result.exit_code == ExitCode.INPUT, result.output
    assert result.output.startswith("error: cannot write") and target in result.output and "not a directory" in result.output
    assert (tmp_path / "a-file").read_text() == "x"


def test_simulate_creates_its_directory(tmp_path):
    assert run("simulate", "-n", "10", "--no-texts", "-o", tmp_path / "new" / "sim").exit_code == 0
    assert (tmp_path / "new" / "sim" / "truth.json").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_is_named(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    target = locked / "board.json"
    _one_error_line(run("fit", "-s", "no-store", "-o", target), target)


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs sysfs, where no file can be created")
def test_a_directory_refusing_files_is_named_when_writing(store):
    """Even when the directory looks writable (as to root), a refused write is one line naming the file."""
    target = Path("/sys/arena-board.json")
    _one_error_line(run("fit", "-s", store, "--ci", "none", "-o", target), target)


def test_a_failed_write_leaves_nothing_behind(tmp_path):
    def fail(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(InputError, match="cannot write .*board.json: No space left on device"):
        write_output(tmp_path / "board.json", fail)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("message", ["parquet: File out of specification: underlying IO error: No space left on device (os error 28)",
                                     "parquet: File out of specification: Invalid thrift: transport error"])
@pytest.mark.parametrize("command", ["export", "simulate"])
def test_a_parquet_file_that_polars_cannot_write_is_named(store, tmp_path, monkeypatch, command, message):
    """Polars reports its own write errors as polars errors (the OS error in the message, or none when the footer
    cannot be written): one line naming the file, as for any write."""
    def full(*args, **kwargs):
        raise pl.exceptions.ComputeError(message)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full)
    args = {"export": ["export", "-s", store, "-o", tmp_path / "out.parquet"],
            "simulate": ["simulate", "-n", "10", "--no-texts", "-f", "parquet", "-o", tmp_path / "sim"]}[command]
    target = tmp_path / "out.parquet" if command == "export" else tmp_path / "sim" / "battles.parquet"
    _one_error_line(run(*args), target)
    assert not target.exists()


def test_an_output_that_is_a_symbolic_link_updates_its_target(store, tmp_path):
    target = tmp_path / "boards" / "2025-03.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    assert run("fit", "-s", store, "--ci", "none", "-o", link).exit_code == 0
    assert link.is_symlink() and json.loads(target.read_text())["kind"] == "leaderboard"
    assert sorted(p.name for p in target.parent.iterdir()) == ["2025-03.json"]  # no temporary left beside it


def test_an_output_that_is_a_pipe_is_written_in_place(store, tmp_path):
    """A named pipe (and so ``/dev/stdout``, ``/dev/null``) is written as a shell's ``>`` would, never replaced by a
    regular file; a reader that stops reading early is not an error."""
    import threading

    pipe = tmp_path / "board.fifo"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()), daemon=True)
    reader.start()
    result = run("fit", "-s", store, "--ci", "none", "-f", "csv", "-o", pipe)
    reader.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert received and received[0].startswith(b"rank,") and pipe.is_fifo()

    def close_early() -> None:
        with open(pipe, "rb") as handle:
            handle.read(10)

    reader = threading.Thread(target=close_early, daemon=True)
    reader.start()
    result = run("export", "-s", store, "-f", "jsonl", "-o", pipe)
    reader.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert pipe.is_fifo()


def test_a_markdown_report_appears_only_with_its_images(store, tmp_path):
    (tmp_path / "report-forest.png").mkdir()  # an image that cannot be written
    result = run("report", "-s", store, "--rounds", "20", "--variants", "none,length", "-o", tmp_path / "report.md")
    assert result.exit_code == ExitCode.INPUT and "report-forest.png" in result.output, result.output
    assert not (tmp_path / "report.md").exists()


# ---------------------------------------------------------------------------------------------- exports

@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_an_empty_quarantine_exports_its_columns(store, tmp_path, fmt):
    target = tmp_path / f"rejected.{fmt}"
    result = run("export", "-s", store, "--table", "quarantine", "-o", target)
    assert result.exit_code == 0, result.output
    if fmt == "csv":
        assert target.read_text().splitlines() == [",".join(QUARANTINE_SCHEMA)]
    elif fmt == "parquet":
        assert pl.read_parquet(target).columns == list(QUARANTINE_SCHEMA)
    else:
        assert target.read_bytes() == b""


FORMULAS = ["=HYPERLINK(\"http://x\",\"y\")", "+cmd", "-2+3", "@SUM(A1)"]


def test_csv_keeps_values_that_look_like_formulas_verbatim(tmp_path):
    """CSV is data for programs: a model named like a spreadsheet formula is written as it is (no quote prefix),
    so an export read back (by arena or any CSV reader) gives the same names."""
    rows = [{"model_a": a, "model_b": b, "winner": w} for a, b, w in zip(FORMULAS * 30, FORMULAS[1:] * 40, ["model_a", "model_b", "tie"] * 40)]
    votes = tmp_path / "votes.jsonl"
    votes.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first, second = tmp_path / "first", tmp_path / "second"
    assert run("ingest", votes, "-s", first).exit_code == 0
    board = run("fit", "-s", first, "--ci", "none", "--min-battles", "1", "-f", "csv")
    assert board.exit_code == 0, board.output
    assert sorted(r["model"] for r in csv.DictReader(io.StringIO(board.stdout))) == sorted(FORMULAS)
    exported = tmp_path / "battles.csv"
    assert run("export", "-s", first, "-o", exported).exit_code == 0
    assert set(pl.read_csv(exported)["model_a"]) == set(FORMULAS)
    assert run("ingest", exported, "-s", second).exit_code == 0
    models = run("info", "-s", second, "-f", "json")
    assert sorted(m["model"] for m in json.loads(models.stdout)["tables"]["models"]) == sorted(FORMULAS)


def test_a_pipe_is_opened_once_and_given_to_the_writer_open(tmp_path):
    """A writer that opened a named pipe itself, again after its reader left, would wait for a reader for ever."""
    import threading

    from arena_cli.io.atomic import put_bytes, write_output

    pipe = tmp_path / "out.fifo"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()), daemon=True)
    reader.start()
    given: list[object] = []
    write_output(pipe, lambda target: given.append(target) or put_bytes(target, b"board\n"))
    reader.join(timeout=30)
    assert received == [b"board\n"] and not isinstance(given[0], Path)
    write_output(tmp_path / "file.txt", lambda target: given.append(target) or put_bytes(target, b"x"))
    assert isinstance(given[1], Path) and (tmp_path / "file.txt").read_bytes() == b"x"
