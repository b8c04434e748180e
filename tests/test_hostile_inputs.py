"""Hostile input files and filters through every command that reads them: never a traceback, the documented exit
code, one line naming the file (or the condition), and an ingest that leaves the store exactly as it was.

Damaged containers (truncated, corrupt, not what their name says), damaged rows (quarantined, the rows around
them read), empty files, standard input, directories, and --where conditions that are not per-battle
true/false conditions.
"""

from __future__ import annotations

import bz2
import dataclasses
import functools
import gzip
import io
import json
import lzma
import os
import random
import re

import polars as pl
import pytest
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.io.store import Store

runner = CliRunner()

MODELS = ["m1", "m2", "m3", "m4"]


def votes(n: int = 400, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        a, b = rng.sample(MODELS, 2)
        rows.append({"question_id": f"q{seed}-{i}", "model_a": a, "model_b": b, "winner": rng.choice(["model_a", "model_b", "tie"]),
                     "turn": 1 + i % 2, "language": rng.choice(["English", "German"])})
    return rows


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def csv_text(rows: list[dict]) -> bytes:
    return ("model_a,model_b,winner\n" + "".join(f"{r['model_a']},{r['model_b']},{r['winner']}\n" for r in rows)).encode()


def halved(data: bytes) -> bytes:
    return data[: len(data) // 2]


def flipped(data: bytes, start: int, length: int = 64) -> bytes:
    damaged = bytearray(data)
    for i in range(start, start + length):
        damaged[i] ^= 0xA5
    return bytes(damaged)


@functools.cache
def corrupt_parquet_bytes() -> bytes:
    """A parquet file whose footer is sound and whose data pages are not, so that reading fails mid-file (parquet
    has no required checksums: the first damage, from the middle on, that polars notices)."""
    rng = random.Random(1)
    n = 60_000
    frame = pl.DataFrame({"model_a": [rng.choice(MODELS) for _ in range(n)], "model_b": [f"n{rng.randrange(30)}" for _ in range(n)],
                          "winner": [rng.choice(["model_a", "model_b", "tie"]) for _ in range(n)], "turn": [rng.randrange(1, 5) for _ in range(n)]})
    buffer = io.BytesIO()
    frame.write_parquet(buffer, row_group_size=10_000, compression="zstd")
    data = buffer.getvalue()
    for offset in range(len(data) // 2, len(data) * 3 // 4, 499):
        damaged = flipped(data, offset, 64)
        try:
            pl.read_parquet(io.BytesIO(damaged))
        except BaseException:
            return damaged
    raise AssertionError("no damage polars notices")


#: name -> (file name, content, a phrase the message must hold)
DAMAGED = {
    "truncated gzip": ("votes.jsonl.gz", lambda: halved(gzip.compress(jsonl(votes()))), "truncated gzip"),
    "gzip with a bad CRC": ("votes.jsonl.gz", lambda: flipped(gzip.compress(jsonl(votes())), -8, 4), "corrupt gzip"),
    "plain text named .gz": ("votes.jsonl.gz", lambda: jsonl(votes()), "not gzip"),
    "truncated bz2": ("votes.csv.bz2", lambda: halved(bz2.compress(csv_text(votes()))), "truncated bz2"),
    "corrupt xz": ("votes.jsonl.xz", lambda: flipped(lzma.compress(jsonl(votes())), 100), "corrupt xz"),
    "zstd": ("votes.jsonl.zst", lambda: b"\x28\xb5\x2f\xfd" + b"\x00" * 40, "zstd"),
    "UTF-16 text": ("votes.csv", lambda: csv_text(votes()).decode().encode("utf-16"), "UTF-16"),
    "truncated parquet": ("votes.parquet", lambda: halved(corrupt_parquet_bytes()), "parquet"),
    "corrupt parquet data": ("votes.parquet", corrupt_parquet_bytes, "corrupt or truncated parquet"),
    "empty parquet": ("votes.parquet", lambda: b"", "parquet"),
    "parquet named .jsonl": ("votes.jsonl", lambda: corrupt_parquet_bytes(), "holds parquet"),
    "JSON lines named .parquet": ("votes.parquet", lambda: jsonl(votes()), "not parquet"),
    "JSON array cut short": ("votes.json", lambda: halved(json.dumps(votes()).encode()), "not valid JSON"),
    "CSV header not UTF-8": ("votes.csv", lambda: b"model_a,model_b,win\xffner\nm1,m2,tie\n", "CSV header"),
    "a directory": ("votes", None, "is a directory"),
    "a missing file": ("missing.jsonl", False, "no such file"),
}


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    root = tmp_path_factory.mktemp("damaged")
    paths = {}
    for case, (name, content, _) in DAMAGED.items():
        folder = root / case.replace(" ", "-")
        folder.mkdir()
        path = folder / name
        if content is None:
            path.mkdir()
        elif content is not False:
            path.write_bytes(content())
        paths[case] = path
    return paths


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store with some battles, to check that a failed ingest leaves it as it was."""
    root = tmp_path_factory.mktemp("store") / "s"
    source = root.parent / "good.jsonl"
    source.write_bytes(jsonl(votes(200, seed=9)))
    assert runner.invoke(app, ["ingest", str(source), "--store", str(root)]).exit_code == 0
    return root


def snapshot(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


#: Every command that reads vote-log files, as the arguments around the file.
COMMANDS = {
    "ingest": lambda path, tmp, store: ["ingest", path, "--store", store],
    "info": lambda path, tmp, store: ["info", path],
    "fit": lambda path, tmp, store: ["fit", path, "--ci", "none"],
    "diff": lambda path, tmp, store: ["diff", path],
    "matrix": lambda path, tmp, store: ["matrix", path],
    "report": lambda path, tmp, store: ["report", path, "-o", tmp / "report.html"],
    "features": lambda path, tmp, store: ["features", path],
}


def arena(*args, input=None, env=None):
    return runner.invoke(app, [str(a) for a in args], input=input, env=env)


def one_line_error(result, *needles):
    """The command failed with one line on stderr, an error naming what it was about, and no traceback."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output and "internal error" not in result.stderr and "Aborted" not in result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", DAMAGED)
def test_a_damaged_file_is_exit_3_with_one_line_naming_it(damaged, store, tmp_path, command, case):
    path = damaged[case]
    before = snapshot(store)
    result = arena(*COMMANDS[command](path, tmp_path, store))
    assert result.exit_code == 3, result.output
    one_line_error(result, str(path), DAMAGED[case][2])
    assert snapshot(store) == before
    assert not (tmp_path / "report.html").exists()
    if command == "ingest" and case == "truncated gzip":  # found while reading, not before
        assert "the store is unchanged" in result.stderr


def test_a_damaged_file_among_good_ones_stores_nothing(damaged, store, tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_bytes(jsonl(votes(50, seed=3)))
    before = snapshot(store)
    result = arena("ingest", good, damaged["truncated gzip"], "--store", store)
    assert result.exit_code == 3
    assert snapshot(store) == before


def test_an_interrupted_gzip_is_never_taken_for_ctrl_d(damaged):
    """Python reports a truncated gzip as EOFError, which the command line takes for Ctrl-D ("Aborted!")."""
    result = arena("fit", damaged["truncated gzip"], env={"ARENA_DEBUG": ""})
    assert result.exit_code == 3 and "Aborted" not in result.output


def _info_raising(monkeypatch, tmp_path, error: BaseException, debug: str):
    """`arena info` of a small log whose library call raises ``error`` (a bug), with ARENA_DEBUG=``debug``."""
    from arena_cli import api

    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(api, "describe", broken)
    path = tmp_path / "v.jsonl"
    path.write_bytes(jsonl(votes(10)))
    return arena("info", path, env={"ARENA_DEBUG": debug})


def test_an_eof_error_under_arena_debug_shows_its_traceback(monkeypatch, tmp_path):
    result = _info_raising(monkeypatch, tmp_path, EOFError("a bug that reads past the end"), "1")
    assert result.exit_code == 1
    assert "Aborted" not in result.output and "EOFError: a bug that reads past the end" in result.stderr


def test_compressed_files_are_read_by_their_content(tmp_path):
    rows = votes(300)
    expected = arena("info", _write(tmp_path / "plain.jsonl", jsonl(rows)), "-f", "json")
    for name, data in [("v.jsonl.gz", gzip.compress(jsonl(rows))), ("v.jsonl.bz2", bz2.compress(jsonl(rows))),
                       ("v.jsonl.xz", lzma.compress(jsonl(rows))), ("gzipped-but-named.jsonl", gzip.compress(jsonl(rows)))]:
        result = arena("info", _write(tmp_path / name, data), "-f", "json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["tables"] == json.loads(expected.stdout)["tables"]


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


# -- damage inside rows: quarantined, the rows around it read ---------------------------------------------------

ROW_DAMAGE = {
    "a cut-off last JSON line": ("v.jsonl", jsonl(votes(60))[:-30], {"unparseable": 1}),
    "ragged CSV rows": ("v.csv", csv_text(votes(60)) + b"m1,m2\nm1,m2,tie,extra\n", {"unparseable": 2}),
    "a NUL in a CSV row": ("v.csv", csv_text(votes(60)) + b"m1,m\x002,tie\n", {"unparseable": 1}),
    "Latin-1 bytes in a CSV row": ("v.csv", csv_text(votes(60)) + b"m\xe91,m2,tie\n", {"non_utf8": 1}),
    "a JSON line nested too deeply": ("v.jsonl", jsonl(votes(60)) + b'{"model_a": "m1", "x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n", {"unparseable": 1}),
}


@pytest.mark.parametrize("case", ROW_DAMAGE)
def test_damaged_rows_are_quarantined_and_counted_in_every_mode(tmp_path, case):
    name, data, reasons = ROW_DAMAGE[case]
    path = _write(tmp_path / name, data)
    ingested = arena("ingest", path, "--store", tmp_path / "s", "--format", "json")
    assert ingested.exit_code == 0, ingested.output
    (summary,) = json.loads(ingested.stdout)["tables"]["sources"]
    assert summary["quarantined"] == sum(reasons.values()) and summary["stored"] + summary["quarantined"] == summary["rows_read"]
    assert dict(Store.open(tmp_path / "s").read("quarantine", ["reason"])["reason"].value_counts().iter_rows()) == reasons
    fitted = arena("fit", path, "--ci", "none", "--min-battles", "1")
    assert fitted.exit_code == 0, fitted.output
    assert f"{sum(reasons.values())} row(s) skipped: " in fitted.stderr and str(path) in fitted.stderr


# -- control characters: a model name with one is rejected, and no message or table passes one to the terminal ------

ESCAPE = "m\x1b]0;pwned\x07"  # an escape sequence that retitles a terminal window


def _with_control_names(rows: list[dict]) -> list[dict]:
    """The votes, with m4 named with a terminal escape sequence and m3 with a NUL in the middle."""
    names = {"m4": ESCAPE, "m3": "m\x003"}
    return [{**r, "model_a": names.get(r["model_a"], r["model_a"]), "model_b": names.get(r["model_b"], r["model_b"])} for r in rows]


def _parquet(rows: list[dict], trim: bool = False) -> bytes:
    frame = pl.DataFrame(rows)
    if trim:  # names that need trimming: the batch path reads the file, not the streamed one
        frame = frame.with_columns(pl.col("model_a") + " ")
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


CONTROL_NAMES = {
    "v.jsonl": lambda rows: jsonl(rows),
    "v.json": lambda rows: json.dumps(rows).encode(),
    "v.csv": lambda rows: csv_text(rows),
    "v.parquet": lambda rows: _parquet(rows),
    "trimmed.parquet": lambda rows: _parquet(rows, trim=True),
}


@pytest.mark.parametrize("name", CONTROL_NAMES)
def test_a_model_name_with_a_control_character_is_rejected_as_a_wrong_type(tmp_path, name):
    rows = _with_control_names(votes(300))
    damaged = sum(1 for r in rows if {r["model_a"], r["model_b"]} & {ESCAPE, "m\x003"})
    path = _write(tmp_path / name, CONTROL_NAMES[name](rows))
    ingested = arena("ingest", path, "--store", tmp_path / "s", "--format", "json")
    assert ingested.exit_code == 0, ingested.output
    (summary,) = json.loads(ingested.stdout)["tables"]["sources"]
    assert (summary["quarantined"], summary["stored"]) == (damaged, len(rows) - damaged)
    quarantine = Store.open(tmp_path / "s").read("quarantine", ["reason", "detail", "raw"])
    wrong_type = quarantine.filter(pl.col("reason") == "wrong_type")
    assert set(quarantine["reason"]) == {"wrong_type"} | ({"unparseable"} if name.endswith(".csv") else set())  # (a CSV row with a NUL: binary data)
    assert wrong_type.height and wrong_type["detail"].str.contains("a control character in the model name").all()
    assert quarantine["raw"].str.contains("pwned").any()  # (each row kept as the file has it)
    fitted = arena("fit", path, "--ci", "none", "--min-battles", "1", "--format", "json")
    assert fitted.exit_code == 0, fitted.output
    assert {row["model"] for row in json.loads(fitted.stdout)["tables"]["leaderboard"]} == {"m1", "m2"}
    assert f"{damaged} row(s) skipped: " in fitted.stderr
    for result in (ingested, fitted):
        assert "\x1b" not in result.stderr and "\x00" not in result.stderr


@pytest.mark.parametrize("character", ["\u200b", "\u200d", "\u202e", "\u2066", "\ufeff", "\u2028"])
@pytest.mark.parametrize("name", ["v.jsonl", "v.parquet"])
def test_a_model_name_with_an_invisible_character_is_a_wrong_type(tmp_path, name, character):
    """A name that would show as another model's (a zero-width space before it, a direction override in it) is
    rejected as a control character is; the other models' votes are fitted."""
    rows = [{**r, "model_a": f"m{character}4" if r["model_a"] == "m4" else r["model_a"]} for r in votes(300)]
    damaged = sum(r["model_a"] == f"m{character}4" for r in rows)
    path = _write(tmp_path / name, CONTROL_NAMES[name](rows))
    fitted = arena("fit", path, "--ci", "none", "--min-battles", "1", "--format", "json")
    assert fitted.exit_code == 0, fitted.output
    assert {row["model"] for row in json.loads(fitted.stdout)["tables"]["leaderboard"]} == {"m1", "m2", "m3", "m4"}  # (m4 as model_b)
    assert f"{damaged} row(s) skipped: wrong_type {damaged}" in " ".join(fitted.stderr.split())


def test_messages_and_tables_show_control_characters_as_escapes(tmp_path):
    rows = votes(200)
    rows[0]["winner"] = "\x1b[2Jmodel_x"  # quoted by the warning about the row it rejects
    path = _write(tmp_path / "v.jsonl", jsonl(rows))
    fitted = arena("fit", path, "--ci", "none")
    assert fitted.exit_code == 0, fitted.output
    assert "\x1b" not in fitted.stderr and r'unknown winner label "\x1b[2Jmodel_x"' in fitted.stderr
    missing = arena("fit", _write(tmp_path / "w.jsonl", jsonl([{"model_a": "a", "mod\x1bel_b": "b", "winner": "tie"}])))
    assert missing.exit_code != 0 and "\x1b" not in missing.stderr and r"mod\x1bel_b" in missing.stderr
    # a library caller's frame is not checked, but its table shows the name as escapes
    from arena_cli import FitOptions, fit
    from arena_cli.render.html import to_html
    from arena_cli.render.text import to_markdown, to_table_text

    frame = pl.DataFrame(_with_control_names(votes(300))).rename({"winner": "outcome"})
    document = fit(frame, FitOptions(ci="none", min_battles=1)).to_document()
    for text in (to_table_text(document).decode(), to_markdown(document).decode(), to_html(document).decode()):
        assert "\x1b" not in text and "\x00" not in text and r"m\x1b]0;pwned\x07" in text and r"m\x003" in text
    # titles and notes too (a note may name a model)
    titled = dataclasses.replace(document, title="board \x1b[2J", tables=tuple(
        dataclasses.replace(t, title=f"{t.title} \x1b[2J", notes=("m\x1b]0;pwned\x07 left out",)) for t in document.tables))
    for text in (to_table_text(titled).decode(), to_markdown(titled).decode(), to_html(titled).decode()):
        assert "\x1b" not in text and r"\x1b[2J" in text and r"m\x1b]0;pwned\x07 left out" in text


def test_a_panic_in_polars_is_one_line_and_exit_1(monkeypatch, tmp_path):
    """polars' PanicException is a BaseException: a bug, reported as any other (not a traceback)."""
    panic = type("PanicException", (BaseException,), {"__module__": "pyo3_runtime"})
    result = _info_raising(monkeypatch, tmp_path, panic("not yet implemented: something\nmore lines"), "")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        "error: internal error, a bug in arena-cli: PanicException: not yet implemented: something (ARENA_DEBUG=1 shows the traceback)"]


# -- typed columns polars cannot convert or write ---------------------------------------------------------

def _typed_log(path, **columns: pl.Series) -> str:
    """A parquet log of three battles (a, b, c: each pair once, no model unbeaten) with these extra columns."""
    pl.DataFrame({"question_id": ["q1", "q2", "q3"], "model_a": ["a", "b", "c"], "model_b": ["b", "c", "a"],
                  "winner": ["model_a", "model_a", "model_a"], **columns}).write_parquet(path)
    return str(path)


def _quarantine(store) -> list[tuple[int, str, str]]:
    parts = Store.open(store).parts("quarantine")
    if not parts:
        return []
    rows = pl.scan_parquet(parts).collect()
    return sorted(zip(rows["source_row"], rows["reason"], rows["detail"]))


FAR = 2**62  # milliseconds: some 146 million years from 1970
TYPED = {
    "time out of range (ms)": ({"tstamp": pl.Series([1, 2, FAR]).cast(pl.Datetime("ms"))}, [(3, "wrong_type", "tstamp: not a valid timestamp")]),
    "time out of range, before": ({"tstamp": pl.Series([1, -FAR, 2]).cast(pl.Datetime("ms", "UTC"))}, [(2, "wrong_type", "tstamp: not a valid timestamp")]),
    "date out of range": ({"tstamp": pl.Series([1, 2, 2**31 - 1], dtype=pl.Int32).cast(pl.Date)}, [(3, "wrong_type", "tstamp: not a valid timestamp")]),
    "a duration as the time": ({"tstamp": pl.Series([1, None, 3]).cast(pl.Duration("ms"))}, [(1, "wrong_type", "tstamp: not a valid timestamp"), (3, "wrong_type", "tstamp: not a valid timestamp")]),
    "an extra date out of range": ({"seen": pl.Series([1, 2**31 - 1, None], dtype=pl.Int32).cast(pl.Date)}, [(2, "wrong_type", "seen: a date or time outside the years 1 to 9999")]),
    "bytes and durations as extras": ({"blob": pl.Series([b"x", b"\xff\x00", None]), "blobs": pl.Series([[b"\xff"], [], None]),
                                       "took": pl.Series([1500, None, 3]).cast(pl.Duration("ms"))}, []),
    "a model name of bytes": ({"model_a": pl.Series([b"a", b"\xffb", b"c"])}, [(2, "wrong_type", "model_a: bytes that are not UTF-8")]),
    "a model name that is an object": ({"model_b": pl.Series([{"n": 1}, None, {"n": 3}])}, [
        (1, "wrong_type", "model_b: a list or an object, not text"), (2, "missing_model", "model_a or model_b is missing or empty"),
        (3, "wrong_type", "model_b: a list or an object, not text")]),
}


@pytest.mark.parametrize("case", TYPED)
def test_typed_columns_polars_cannot_convert_are_rejected_or_kept_as_text(tmp_path, case):
    """A date or time past the years 1 to 9999 (polars panics converting some), a time of another type, bytes that
    are no UTF-8 name, or a nested name reject their row as a wrong type; bytes and durations in other columns are
    kept as text. Ingest and a fit of the file agree."""
    columns, rejected = TYPED[case]
    path = _typed_log(tmp_path / "v.parquet", **columns)
    ingested = arena("ingest", path, "--store", tmp_path / "s", env={"ARENA_DEBUG": ""})
    assert ingested.exit_code == 0, ingested.output
    assert [(row, reason, detail[: len(want)]) for (row, reason, detail), (_, _, want) in zip(_quarantine(tmp_path / "s"), rejected)] == rejected
    assert len(_quarantine(tmp_path / "s")) == len(rejected)
    exported = arena("export", "--store", tmp_path / "s", "-o", tmp_path / "all.csv")
    assert exported.exit_code == 0, exported.output
    if case == "bytes and durations as extras":
        stored = pl.read_csv(tmp_path / "all.csv")
        assert stored["blob"].to_list() == ["78", "ff00", None] and stored["took"].to_list() == ["PT1.5S", None, "PT0.003S"]
    quarantine = arena("export", "--store", tmp_path / "s", "--table", "quarantine", "-o", tmp_path / "q.jsonl")
    assert quarantine.exit_code == 0, quarantine.output
    if len(rejected) == 3:
        return
    from_file = arena("fit", path, "--ci", "none", "--min-battles", "1", "-f", "json")
    from_store = arena("fit", "-s", tmp_path / "s", "--ci", "none", "--min-battles", "1", "-f", "json")
    assert from_file.exit_code == from_store.exit_code, (from_file.output, from_store.output)
    if from_file.exit_code == 0:
        assert json.loads(from_file.stdout)["tables"]["leaderboard"] == json.loads(from_store.stdout)["tables"]["leaderboard"]


@pytest.mark.parametrize("container", ["jsonl", "json"])
def test_a_nested_model_name_beside_text_names_is_rejected_not_taken_as_its_json(tmp_path, container):
    """A JSON log whose model name is an object or a list in some rows and text in others (so that the batch is
    read line by line, every field as text): those rows are rejected as a wrong type, as in a batch where every
    name is nested; a name that is text spelt like JSON stays a name. Ingest, a fit of the file and the Python API
    agree."""
    records = [
        {"model_a": "x", "model_b": "y", "winner": "model_a"},
        {"model_a": {"n": 1}, "model_b": "y", "winner": "model_a"},
        {"model_a": '{"n":1}', "model_b": "y", "winner": "model_b"},
        {"model_a": "y", "model_b": ["z"], "winner": "model_b"},
        {"model_a": "x", "model_b": "y", "winner": "tie"},
        {"model_a": "x", "model_b": '{"n":1}', "winner": "model_a"},
    ]
    path = tmp_path / f"v.{container}"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) if container == "jsonl" else json.dumps(records))
    assert arena("ingest", path, "--store", tmp_path / "s").exit_code == 0
    assert [(row, reason, detail) for row, reason, detail in _quarantine(tmp_path / "s")] == [
        (2, "wrong_type", "model_a: a list or an object, not text"), (4, "wrong_type", "model_b: a list or an object, not text")]
    stored = Store.open(tmp_path / "s").read("battles", ["model_a", "model_b"])
    assert sorted(set(stored["model_a"]) | set(stored["model_b"])) == ["x", "y", '{"n":1}']
    from_file = arena("fit", path, "--ci", "none", "--min-battles", "1", "-f", "json")
    from_store = arena("fit", "-s", tmp_path / "s", "--ci", "none", "--min-battles", "1", "-f", "json")
    assert from_file.exit_code == from_store.exit_code == 0, (from_file.output, from_store.output)
    assert json.loads(from_file.stdout)["tables"]["leaderboard"] == json.loads(from_store.stdout)["tables"]["leaderboard"]
    assert "wrong_type 2" in from_file.stderr
    from arena_cli import api
    from arena_cli.io.options import Source

    board = api.fit(Source((path,)), min_battles=1, ci="none").leaderboard
    assert sorted(board["model"]) == sorted(m["model"] for m in json.loads(from_file.stdout)["tables"]["leaderboard"])


def test_text_stored_as_bytes_reads_as_the_same_text(tmp_path):
    """A writer that stores strings as bytes (no UTF8 annotation): names trimmed and times parsed as text columns'
    are, so both files give the same battles and the same quarantine."""
    rows = {"question_id": ["q1", "q2", "q3", "q4"], "model_a": [" m1 ", "m2", "m1", "m3"], "model_b": ["m2", "m3", "m1 ", "m1"],
            "winner": ["model_a", "tie", "model_b", "model_a"], "tstamp": ["2024-01-02T03:04:05Z", "1700000000", "2024-01-01", "not a time"]}
    text = pl.DataFrame(rows)
    as_bytes = text.with_columns(pl.col(c).cast(pl.Binary) for c in text.columns)
    found = []
    for name, frame in (("text.parquet", text), ("bytes.parquet", as_bytes)):
        frame.write_parquet(tmp_path / name)
        assert arena("ingest", tmp_path / name, "--store", tmp_path / name.replace(".parquet", "")).exit_code == 0
        store = Store.open(tmp_path / name.replace(".parquet", ""))
        found.append((store.read("battles", ["model_a", "model_b", "timestamp"]).rows(), [(r, reason) for r, reason, _ in _quarantine(store.root)]))
    assert found[0] == found[1]
    assert found[0][1] == [(3, "self_battle"), (4, "wrong_type")]


def test_a_nested_text_field_is_stored_as_it_always_was(tmp_path):
    """A nested value in a text field is kept as the JSON of {field: value}, a null one as {field: null}: stored
    values and content hashes of logs ingested by earlier versions stay the same (a re-ingest adds nothing)."""
    from arena_cli.io.fields import parse_text

    frame = pl.DataFrame({"category": [{"hard": True}, None]})
    assert frame.select(parse_text("category", frame.schema["category"])).to_series().to_list() == ['{"category":{"hard":true}}', '{"category":null}']


@pytest.mark.parametrize("text", ["0000-06-01", "9999-12-31T23:00:00-05:00"])
def test_an_iso_time_outside_the_years_1_to_9999_is_a_wrong_type(tmp_path, text):
    rows = votes(20)
    rows[2]["tstamp"] = text
    path = _write(tmp_path / "v.jsonl", jsonl(rows))
    assert arena("ingest", path, "--store", tmp_path / "s").exit_code == 0
    assert [(row, reason) for row, reason, _ in _quarantine(tmp_path / "s")] == [(3, "wrong_type")]
    assert arena("info", "--store", tmp_path / "s").exit_code == 0


def test_a_json_time_past_the_year_9999_is_a_wrong_type(tmp_path):
    """Milliseconds past the year 9999 (but within 64 bits of microseconds) reject their row, as polars panics
    converting some of them."""
    rows = votes(20)
    rows[3]["tstamp"], rows[5]["tstamp"] = 9_100_000_000_000_000, -9_100_000_000_000_000
    path = _write(tmp_path / "v.jsonl", jsonl(rows))
    ingested = arena("ingest", path, "--store", tmp_path / "s", env={"ARENA_DEBUG": ""})
    assert ingested.exit_code == 0, ingested.output
    assert [(row, reason) for row, reason, _ in _quarantine(tmp_path / "s")] == [(4, "wrong_type"), (6, "wrong_type")]


# -- empty files: an empty log ------------------------------------------------------------------------------

def _parquet_of(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


EMPTY = {"v.jsonl": b"", "blank.jsonl": b"\n  \n", "v.csv": b"", "header.csv": b"model_a,model_b,winner\n", "v.json": b"",
         "array.json": b"[]", "v.jsonl.gz": b"", "empty-member.jsonl.gz": gzip.compress(b""),
         # a parquet file of no rows, whatever its columns (a fit read only the columns it needs, and asked for them first)
         "no-columns.parquet": _parquet_of(pl.DataFrame()), "other-columns.parquet": _parquet_of(pl.DataFrame({"x": pl.Series([], dtype=pl.Int64)}))}


@pytest.mark.parametrize("name", EMPTY)
def test_an_empty_file_is_an_empty_log(tmp_path, name):
    path = _write(tmp_path / name, EMPTY[name])
    ingested = arena("ingest", path, "--store", tmp_path / "s")
    assert ingested.exit_code == 0, ingested.output
    assert f"{path}: no rows (an empty log)" in " ".join(ingested.stderr.split())
    fitted = arena("fit", path)
    assert fitted.exit_code == 6
    one_line_error(fitted, f"no battles: {path} has no rows")


@pytest.mark.parametrize("content", [b"", b"\n \n", gzip.compress(b""), b"\xef\xbb\xbf"], ids=["none", "blank", "empty-gzip", "bom"])
@pytest.mark.parametrize("name", ["-", "votes.txt"])
def test_empty_input_whose_format_nothing_says_is_an_empty_log(tmp_path, content, name):
    """Standard input, or a file whose name says no format, with no content (`zcat today.jsonl.gz | arena ingest -`
    on a day without votes) is an empty log as an empty file of a known format is: it was an error, exit 3."""
    source = "-" if name == "-" else _write(tmp_path / name, content)
    ingested = arena("ingest", source, "--store", tmp_path / "s", input=content if name == "-" else None)
    assert ingested.exit_code == 0, ingested.output
    assert f"{source}: no rows (an empty log)" in " ".join(ingested.stderr.split())
    fitted = arena("fit", source, input=content if name == "-" else None)
    assert fitted.exit_code == 6
    one_line_error(fitted, f"no battles: {source} has no rows")


def test_files_whose_every_row_is_dropped_say_why(tmp_path):
    path = _write(tmp_path / "crowd.csv", b"left,right,verdict\nm1,m2,L\nm2,m3,R\n")
    result = arena("fit", path, "--map", "model_a=left", "--map", "model_b=right", "--map", "outcome=verdict")
    assert result.exit_code == 6
    one_line_error(result, "none of the 2 row(s)", "unknown_winner 2", 'unknown winner label "L"', "--winner-map")


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_file_given_twice_is_two_sources_and_the_second_only_repeats_the_first(tmp_path, fmt):
    """Each source keeps its own counts (its battles, then as many duplicates): none is merged into the other's."""
    path = tmp_path / f"v.{fmt}"
    if fmt == "jsonl":
        _write(path, jsonl(votes(300)))
    else:
        pl.DataFrame(votes(300)).write_parquet(path)
    once = json.loads(arena("info", path, "-f", "json").stdout)["tables"]
    for command in (["info", "-f", "json"], ["fit", "--ci", "none"], ["matrix"]):
        result = arena(command[0], path, path, *command[1:])
        assert result.exit_code == 0, result.output
        assert "300 exact duplicate row(s) dropped" in result.stderr
        if command[0] == "info":
            assert json.loads(result.stdout)["tables"] == once
    ingested = arena("ingest", path, path, "--store", tmp_path / "s", "--format", "json")
    assert [(s["stored"], s["duplicates"]) for s in json.loads(ingested.stdout)["tables"]["sources"]] == [(300, 0), (0, 300)]


# -- standard input --------------------------------------------------------------------------------------------


def test_standard_input_is_read_as_dash(tmp_path):
    rows = votes(300)
    from_file = arena("info", _write(tmp_path / "v.jsonl", jsonl(rows)), "-f", "json")
    expected = json.loads(from_file.stdout)["tables"]
    for data, options in [(jsonl(rows), []), (gzip.compress(jsonl(rows)), []), (json.dumps(rows).encode(), []),
                          (csv_text(rows), ["--input-format", "csv"])]:
        result = arena("info", "-", *options, "-f", "json", input=data)
        assert result.exit_code == 0, result.output
        if not options:  # CSV has no question ids or languages
            assert json.loads(result.stdout)["tables"] == expected
    parquet = tmp_path / "v.parquet"
    pl.DataFrame(rows).write_parquet(parquet)
    assert arena("fit", "-", "--ci", "none", input=parquet.read_bytes()).exit_code == 0
    ingested = arena("ingest", "-", "--store", tmp_path / "s", "--format", "json", input=jsonl(rows))
    assert json.loads(ingested.stdout)["tables"]["sources"][0] == {
        "source": "-", "rows_read": 300, "stored": 300, "duplicates": 0, "quarantined": 0, "quarantined_by_reason": ""}


def test_standard_input_that_is_csv_needs_the_format(tmp_path):
    result = arena("fit", "-", input=csv_text(votes(10)))
    assert result.exit_code == 3
    one_line_error(result, "-: cannot tell the format", "--input-format csv")


def test_a_store_directory_given_as_a_file_points_at_store(store):
    result = arena("fit", store)
    assert result.exit_code == 3
    one_line_error(result, f"{store} is a directory", f"--store {store}")


# -- --where: a true/false condition on each battle ----------------------------------------------------------------

BAD_WHERE = {
    "turn + 1": "is not a true/false condition (it gives int32 values)",
    "model_a": "is not a true/false condition (it gives string values)",
    "NULL": "is not a true/false condition (it gives null values)",
    "1": "is not a true/false condition",
    "turn >": "cannot parse --where",
    "language = 'x' AND": "cannot parse --where",
    "model_a COLLATE \"C\" = 'x'": "Collate expressions are not supported",
    "(turn, model_a) = (1, 'x')": "Tuple expressions are not supported",
    "turn = 1; DROP TABLE battles": "cannot parse --where",
    "colour = 'red'": "names unknown column(s) colour",
    "turn = 'abc'": "failed: cannot compare string with numeric type",
    "count(*) > 0": "is not a condition on each battle",
    "sum(turn) > 10": "is not a condition on each battle",
    "turn > avg(turn)": "is not a condition on each battle",
    "ROW_NUMBER() OVER () < 10": "is not a condition on each battle",
    "turn IN (SELECT 1)": "subqueries are not supported",
    "turn > (SELECT 1)": "subqueries are not supported",
}
WHERE_COMMANDS = {
    "info": lambda source, tmp, where: ["info", *source, "--where", where],
    "fit": lambda source, tmp, where: ["fit", *source, "--ci", "none", "--where", where],
    "diff": lambda source, tmp, where: ["diff", *source, "--where", where],
    "matrix": lambda source, tmp, where: ["matrix", *source, "--where", where],
    "report": lambda source, tmp, where: ["report", *source, "-o", tmp / "r.html", "--where", where],
    "export": lambda source, tmp, where: ["export", *source, "-o", tmp / "out.csv", "--where", where],
    "compare": lambda source, tmp, where: ["compare", source[1], source[1], "--old-where", where],
}


@pytest.fixture(scope="module")
def vote_file(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("where") / "v.jsonl", jsonl(votes(300)))


@pytest.mark.parametrize("command", WHERE_COMMANDS)
@pytest.mark.parametrize("where", BAD_WHERE)
def test_a_bad_where_is_exit_3_with_one_line_naming_it(store, vote_file, tmp_path, command, where):
    """The error names the option the condition was given with (compare's --old-where, no --where of its own)."""
    option = "--old-where" if command == "compare" else "--where"
    sources = [["--store", store]] + ([[vote_file]] if command not in ("export", "compare") else [])
    for source in sources:
        result = arena(*WHERE_COMMANDS[command](source, tmp_path, where))
        assert result.exit_code == 3, result.output
        one_line_error(result, BAD_WHERE[where].replace("--where", option), f"{option} ",
                       repr(where)[1:-1] if "cannot parse" not in BAD_WHERE[where] else option)
        assert not any(tmp_path.iterdir())


def test_a_where_failing_on_values_is_exit_3(store):
    result = arena("fit", "--store", store, "--ci", "none", "--where", "CAST(language AS INT) > 1")
    assert result.exit_code == 3
    one_line_error(result, "failed: conversion from `str` to `i32` failed")


def test_a_good_where_on_a_literal_that_looks_like_an_aggregate_name(store):
    result = arena("info", "--store", store, "--where", "model_a <> 'Len' AND language <> 'count'", "-f", "json")
    assert result.exit_code == 0, result.output


# -- ids that name prompts ---------------------------------------------------------------------------------------------


def prompt_keyed_log(path):
    """arena-hard-auto's battle log: a row per prompt, model and game, question_id naming the prompt."""
    rng = random.Random(5)
    rows = []
    for q in range(60):
        for model in MODELS[1:]:
            for game in range(2):
                a, b = (MODELS[0], model) if game == 0 else (model, MODELS[0])
                rows.append({"question_id": f"prompt-{q}", "model_a": a, "model_b": b, "winner": rng.choice(["model_a", "model_b", "tie"]), "judge": "gpt-4"})
    rows += rows[:30]  # the same judgments twice: exact duplicates by their ids
    return _write(path, jsonl(rows)), len(rows)


@pytest.mark.parametrize("command", ["info", "fit", "diff", "matrix", "report", "features"])
def test_ids_that_name_prompts_are_said_and_content_ids_keep_every_vote(tmp_path, command):
    path, n = prompt_keyed_log(tmp_path / "battles.jsonl")
    variants = ["--variants", "none,plain=none", "--rounds", "20", "--min-battles", "1"]  # no texts: no style variant
    args = {"fit": ["--ci", "none", "--min-battles", "1"], "report": ["-o", tmp_path / "r.html", *variants], "diff": variants,
            "matrix": ["--min-battles", "1"]}.get(command, [])
    result = arena(command, path, *args)
    assert result.exit_code == 0, result.output
    said = " ".join(result.stderr.split())
    assert "question_id probably names prompts" in said and "--map battle_id=" in said
    assert "were skipped as conflicting duplicates" in said  # a read keeps no quarantine
    duplicates = int(re.search(r"([\d,]+) exact duplicate row\(s\) dropped", said).group(1).replace(",", ""))
    skipped = int(re.search(r"([\d,]+) row\(s\) skipped: conflicting_duplicate", said).group(1).replace(",", ""))
    if command == "info":  # every row counted: kept, an exact duplicate or skipped
        assert json.loads(arena("info", path, "-f", "json").stdout)["meta"]["overview"]["battles"] + duplicates + skipped == n
    kept = arena(command, path, "--map", "battle_id=", *args)
    assert kept.exit_code == 0, kept.output
    warned = " ".join(line for line in kept.stderr.splitlines() if line.startswith("warning"))
    assert "skipped" not in warned and "duplicate" not in warned and "prompts" not in warned
    if command == "info":
        assert json.loads(arena("info", path, "--map", "battle_id=", "-f", "json").stdout)["meta"]["overview"]["battles"] == n


def test_ingest_says_when_ids_name_prompts(tmp_path):
    path, n = prompt_keyed_log(tmp_path / "battles.jsonl")
    result = arena("ingest", path, "--store", tmp_path / "s", "--format", "json")
    said = " ".join(result.stderr.split())
    assert "question_id probably names prompts" in said
    assert "were quarantined as conflicting duplicates (reason conflicting_duplicate)" in said and "dropped as conflicting" not in said
    quarantine = Store.open(tmp_path / "s").read("quarantine", ["reason"])  # as the note says: kept, not dropped
    assert quarantine is not None and set(quarantine["reason"]) == {"conflicting_duplicate"}
    assert any("probably names prompts" in w for w in json.loads(result.stdout)["meta"]["warnings"])
    kept = arena("ingest", path, "--store", tmp_path / "t", "--map", "battle_id=")
    assert kept.exit_code == 0 and Store.open(tmp_path / "t").rows("battles") == n


def test_a_re_export_conflicting_with_the_store_is_not_taken_for_prompt_ids(tmp_path):
    rows = votes(100)
    first = _write(tmp_path / "day1.jsonl", jsonl(rows))
    assert arena("ingest", first, "--store", tmp_path / "s").exit_code == 0
    again = _write(tmp_path / "day1-with-category.jsonl", jsonl([{**r, "category": "chat"} for r in rows]))
    result = arena("ingest", again, "--store", tmp_path / "s")
    assert result.exit_code == 0 and "prompts" not in result.stderr


def test_map_battle_id_empty_keeps_a_kaggle_csv_kaggle(tmp_path):
    path = _write(tmp_path / "train.csv", b"id,model_a,model_b,prompt,response_a,response_b,winner_model_a,winner_model_b,winner_tie\n"
                  b'1,m1,m2,"[""hi""]","[""a""]","[""b""]",1,0,0\n1,m1,m2,"[""hi""]","[""a""]","[""b""]",1,0,0\n')
    result = arena("info", path, "--map", "battle_id=", "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["meta"]["overview"]["battles"] == 2


def test_no_hint_names_an_option_the_command_lacks(tmp_path):
    """Every file-reading command has --input-format, --map and --winner-map; hints name them, not --format."""
    path = _write(tmp_path / "votes.dat", csv_text(votes(5)))
    for command in ("ingest", "info", "fit", "diff", "matrix", "features"):
        result = arena(command, path, *(["--store", tmp_path / "s"] if command == "ingest" else []))
        assert result.exit_code == 3 and "--input-format csv" in result.stderr, result.output
    mapped = _write(tmp_path / "crowd.csv", b"left,right,verdict\nm1,m2,L\n")
    result = arena("fit", mapped)
    assert result.exit_code == 3 and "--map model_a=COL" in result.stderr
    assert os.path.exists(mapped)


@pytest.mark.parametrize("where", ["turn IN (SELECT 1)", "turn > (SELECT 1)", "EXISTS (SELECT 1)", "NOT EXISTS ( select 2 )",
                                   "turn = (SELECT max(turn) FROM battles)", "model_a IN (SELECT model_b FROM self WHERE turn > 1)",
                                   "turn > 1 AND language IN (SELECT 'x')"])
def test_a_subquery_in_where_is_named_as_one(where):
    """Not an "aggregate", nor polars' "relation 'battles' was not found": the error says what the construct is."""
    from arena_cli.errors import InputError
    from arena_cli.io.battles import where_expression

    with pytest.raises(InputError, match="subqueries are not supported"):
        where_expression(where)


@pytest.mark.parametrize("where", ["language = 'SELECT'", "model_a = '(select x)'", "turn > 1"])
def test_text_that_reads_select_in_a_literal_is_no_subquery(where):
    from arena_cli.io.battles import where_expression

    where_expression(where)


@pytest.mark.parametrize("fixture, column", [("decimal256.parquet", "price"), ("decimal256-in-struct.parquet", "meta.price")])
def test_a_parquet_column_of_decimals_polars_cannot_read_is_named_not_called_damage(tmp_path, fixture, column):
    """A 256-bit decimal (40 digits) makes polars refuse the whole file, or, within a struct, read wrong values and
    panic: ingest says which column and what to do, in one line, exit 3, the store untouched; a fit, which reads
    only the columns it needs, reads the file, and names the column when it needs it."""
    from pathlib import Path

    path = Path(__file__).parent / "fixtures" / "parquet" / fixture
    ingested = arena("ingest", path, "--store", tmp_path / "s")
    assert ingested.exit_code == 3
    assert ingested.stderr.strip().splitlines() == [
        f"error: {path}: column {column} is a decimal of 40 digits, and polars reads at most 38: write it as text or a float "
        "(or leave it out), then read the file again; nothing was ingested, the store is unchanged"]
    assert not (tmp_path / "s").exists()
    fitted = arena("fit", path, "--ci", "none", "--min-battles", "1", "-f", "json")
    assert fitted.exit_code == 0, fitted.output
    assert sorted(row["model"] for row in json.loads(fitted.stdout)["tables"]["leaderboard"]) == ["a", "b", "c"]
    filtered = arena("fit", path, "--ci", "none", "--min-battles", "1", "--where", f"{column.split('.')[0]} is not null")
    assert filtered.exit_code == 3 and f"column {column} is a decimal of 40 digits" in filtered.stderr, filtered.stderr
    piped = arena("ingest", "-", "-i", "parquet", "--store", tmp_path / "s", input=path.read_bytes())
    assert piped.exit_code == 3 and f"-: column {column} is a decimal of 40 digits" in piped.stderr, piped.stderr


@pytest.mark.parametrize("name", ["__row", "__raw", "__nested"])
@pytest.mark.parametrize("container", ["jsonl", "json", "csv", "parquet"])
def test_a_field_named_as_a_readers_own_column_is_refused_in_one_line(tmp_path, name, container):
    """A source field named as a column the readers add would collide with it or be taken for it (a ``__nested``
    list for the reader's marks of nested values): exit 3, one line naming it, nothing stored."""
    frame = pl.DataFrame({"model_a": ["a", "b"], "model_b": ["b", "a"], "winner": ["model_a", "tie"], name: ["x", "y"]})
    path = tmp_path / f"v.{container}"
    {"jsonl": frame.write_ndjson, "json": frame.write_json, "csv": frame.write_csv, "parquet": frame.write_parquet}[container](path)
    ingested = arena("ingest", path, "--store", tmp_path / "s")
    assert ingested.exit_code == 3
    assert ingested.stderr.strip().splitlines() == [
        f"error: {path}: a field is named {name}, a name arena-cli keeps for its own use; rename it; nothing was ingested, the store is unchanged"]


def test_a_field_named_as_a_readers_own_column_after_the_first_lines_is_refused_by_a_fit_as_by_ingest(tmp_path):
    """A fit reads a long JSON-lines log streamed, with only the fields it needs: a reader's own name met in a later
    line (null, even) is refused as ingest refuses it, not skipped."""
    lines = [{"model_a": f"m{i % 5}", "model_b": f"m{(i + 1) % 5}", "winner": "model_a" if i % 3 else "tie"} for i in range(3000)]
    lines[2500]["__row"] = None
    path = tmp_path / "v.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for command in (["fit", path, "--ci", "none"], ["ingest", path, "--store", tmp_path / "s"]):
        result = arena(*command)
        assert result.exit_code == 3, result.output
        assert f"{path}: a field is named __row, a name arena-cli keeps for its own use; rename it" in result.stderr


def _votes(n=120):
    """Votes of four models, each against every other, with every outcome."""
    models = ["alpha", "beta", "gamma", "delta"]
    rows = [(models[i % 4], models[(i + 1 + i // 4 % 3) % 4], ["model_a", "model_b", "tie"][i % 3]) for i in range(n)]
    return pl.DataFrame(rows, schema=["model_a", "model_b", "winner"], orient="row")


def _quarantine(store):
    """A store's quarantined rows: (source row, reason, detail), in row order ([] for none)."""
    rows = Store.open(store).read("quarantine", ["source_row", "reason", "detail"])
    return [] if rows is None else sorted(rows.rows())


def _leaderboard(*args):
    result = arena("fit", *args, "--ci", "none", "--min-battles", "1", "-f", "json")
    assert result.exit_code == 0, result.output
    return [(row["model"], row["score"], row["battles"]) for row in json.loads(result.stdout)["tables"]["leaderboard"]]


def test_dictionary_encoded_names_and_labels_are_trimmed_and_checked_as_text_is(tmp_path):
    """A parquet column written dictionary-encoded (pandas' category, Arrow's dictionary) reads as categorical: its
    names and winner labels are trimmed, and a name with a control character rejected, as in a column of text (they
    were taken as they were: "beta " and "beta" two models, an escape sequence a model)."""
    votes = _votes()
    padded = votes.with_columns(pl.when(pl.int_range(pl.len()) % 2 == 0).then(pl.col(c) + " ").otherwise(" " + pl.col(c)).alias(c)
                                for c in ("model_a", "model_b", "winner"))
    padded = padded.with_columns(pl.when(pl.int_range(pl.len()) == 5).then(pl.lit("\x1b[2Jevil")).otherwise(pl.col("model_a")).alias("model_a"))
    plain, categorical = tmp_path / "plain.parquet", tmp_path / "categorical.parquet"
    padded.write_parquet(plain)
    padded.with_columns(pl.col(c).cast(pl.Categorical) for c in ("model_a", "model_b", "winner")).write_parquet(categorical)
    assert pl.read_parquet_schema(categorical)["model_a"] == pl.Categorical
    assert _leaderboard(categorical) == _leaderboard(plain)
    assert sorted(name for name, _, _ in _leaderboard(categorical)) == ["alpha", "beta", "delta", "gamma"]
    for path in (plain, categorical):
        ingested = arena("ingest", path, "--store", tmp_path / f"s-{path.stem}")
        assert ingested.exit_code == 0, ingested.output
    quarantined = [_quarantine(tmp_path / f"s-{name}") for name in ("plain", "categorical")]
    assert quarantined[0] == quarantined[1] == [(6, "wrong_type", "model_a: a control character in the model name")]



def test_model_names_given_as_bytes_are_checked_as_text_is(tmp_path):
    """A parquet column of bytes is decoded as UTF-8 and then checked as text: a name with a NUL has a control
    character (it was a model of its own), a blank one is missing (it was called bytes that are not UTF-8), and
    only bytes that are not UTF-8 are called so."""
    votes = _votes().with_columns(pl.col("model_a").cast(pl.Binary))
    odd = {3: b"gam\x00ma", 7: b"   ", 11: b"\xff\xfe"}
    names = [odd.get(i, name) for i, name in enumerate(votes["model_a"].to_list())]
    path = tmp_path / "bytes.parquet"
    votes.with_columns(pl.Series("model_a", names, dtype=pl.Binary)).write_parquet(path)
    ingested = arena("ingest", path, "--store", tmp_path / "s")
    assert ingested.exit_code == 0, ingested.output
    assert _quarantine(tmp_path / "s") == [
        (4, "wrong_type", "model_a: a control character in the model name"),
        (8, "missing_model", "model_a or model_b is missing or empty"),
        (12, "wrong_type", "model_a: bytes that are not UTF-8"),
    ]


@pytest.mark.parametrize("layout", ["flat", "conv_metadata"])
def test_counts_given_as_durations_are_rejected_not_a_crash(tmp_path, layout):
    """A count typed as a duration is no count: its rows are quarantined as of the wrong type (a duration cannot be
    cast to text, and ingest, fit and features ended in an internal error)."""
    votes = _votes(60)
    tokens = pl.duration(milliseconds=pl.int_range(pl.len()) + 10)
    if layout == "flat":
        votes = votes.with_columns(tokens.alias("tokens_a"), (pl.int_range(pl.len()) + 10).alias("tokens_b"))
    else:
        votes = votes.with_columns(pl.struct(tokens.alias("sum_assistant_a_tokens"), (pl.int_range(pl.len()) + 10).alias("sum_assistant_b_tokens")).alias("conv_metadata"))
    path = tmp_path / "durations.parquet"
    votes.write_parquet(path)
    ingested = arena("ingest", path, "--store", tmp_path / "s")
    assert ingested.exit_code == 0, ingested.output
    assert {reason for _, reason, _ in _quarantine(tmp_path / "s")} == {"wrong_type"}
    fitted = arena("fit", path, "--style", "length", "--ci", "none")
    assert fitted.exit_code == 6 and "wrong_type 60" in fitted.stderr, fitted.output


@pytest.mark.parametrize("dtype", [pl.Time(), pl.Date(), pl.Datetime("us"), pl.Boolean(), pl.Categorical()])
def test_a_fit_of_a_file_keeps_and_rejects_the_rows_ingest_does_whatever_the_type_of_a_count(tmp_path, dtype):
    """A count column (tokens_a) of a type that is no number: ingest quarantines the rows that give one, and the style
    fit of the file stopped instead ("column 'tokens_a' is Time, not numeric", exit 3), the rows left having it null;
    dictionary-encoded number text, which ingest keeps as counts, stopped both fits. The fit of the file skips the
    rows ingest quarantines, for the same reason, and gives the leaderboard a fit of the store gives."""
    import datetime

    given = [i % 3 == 0 for i in range(120)]
    values = {pl.Time(): datetime.time(0, 1, 2), pl.Date(): datetime.date(2025, 3, 1), pl.Datetime("us"): datetime.datetime(2025, 3, 1),
              pl.Boolean(): True, pl.Categorical(): "12"}
    tokens = pl.Series("tokens_a", [values[dtype] if g else None for g in given], dtype=pl.String if dtype == pl.Categorical() else dtype)
    turns = [[{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": "word " * (i % 9 + 1)}] for i in range(120)]
    message = pl.Struct({"role": pl.String(), "content": pl.String()})
    votes = _votes(120).with_columns(tokens.cast(dtype), pl.Series("tokens_b", [12 + i % 5 for i in range(120)]),
                                     pl.Series("conversation_a", turns, dtype=pl.List(message)), pl.Series("conversation_b", turns[::-1], dtype=pl.List(message)))
    path = tmp_path / "counts.parquet"
    votes.write_parquet(path)
    assert pl.read_parquet_schema(path)["tokens_a"] == dtype
    ingested = arena("ingest", path, "--store", tmp_path / "s")
    assert ingested.exit_code == 0, ingested.output
    rejected = [] if dtype == pl.Categorical() else [(i + 1, "wrong_type", "tokens_a: not a valid count (a whole number from 0 to 2^53-1)") for i in range(120) if given[i]]
    assert _quarantine(tmp_path / "s") == rejected
    fitted = [arena("fit", *source, "--style", "length", "--ci", "none", "--min-battles", "1", "-f", "json") for source in ([path], ["--store", tmp_path / "s"])]
    assert all(result.exit_code == 0 for result in fitted), fitted[0].output
    assert json.loads(fitted[0].stdout)["tables"] == json.loads(fitted[1].stdout)["tables"]
    assert ("40 row(s) skipped: wrong_type 40 (first: " in fitted[0].stderr) == bool(rejected), fitted[0].stderr


def test_counts_given_as_bytes_are_the_numbers_they_spell(tmp_path):
    """A style count stored as bytes (b"12", as some writers store text) is validated as the number its text spells,
    and is that number in a fit of the file and of the store: it was kept as hex text ("3132"), which both fits read
    as 3,132 tokens."""
    tokens = [10 + i % 7 for i in range(90)]
    votes = _votes(90).with_columns(pl.Series("tokens_a", tokens), pl.Series("tokens_b", [14 - i % 5 for i in range(90)]))
    numbers, spelt = tmp_path / "numbers.parquet", tmp_path / "bytes.parquet"
    votes.write_parquet(numbers)
    votes.with_columns(pl.col("tokens_a").cast(pl.String).cast(pl.Binary)).write_parquet(spelt)
    assert pl.read_parquet_schema(spelt)["tokens_a"] == pl.Binary
    assert arena("ingest", spelt, "--store", tmp_path / "s").exit_code == 0
    expected = _leaderboard(numbers, "--style", "length")
    assert _leaderboard(spelt, "--style", "length") == expected
    fitted = arena("fit", "--store", tmp_path / "s", "--style", "length", "--ci", "none", "--min-battles", "1", "-f", "json")
    assert json.loads(fitted.stdout)["tables"] == json.loads(arena("fit", numbers, "--style", "length", "--ci", "none", "--min-battles", "1", "-f", "json").stdout)["tables"]


def test_conversations_of_a_fixed_number_of_messages_are_conversations(tmp_path):
    """A fixed-size list of messages (Arrow's fixed_size_list) is a conversation as a list of them is: the same
    battles and the same features (they were all rejected as not a list of messages)."""
    message = pl.Struct({"role": pl.String(), "content": pl.String()})
    turns = [[{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": "# A\n" + "word " * (i % 7 + 1)}] for i in range(60)]
    votes = _votes(60).with_columns(pl.Series("conversation_a", turns, dtype=pl.List(message)), pl.Series("conversation_b", turns[::-1], dtype=pl.List(message)))
    lists, arrays = tmp_path / "lists.parquet", tmp_path / "arrays.parquet"
    votes.write_parquet(lists)
    votes.with_columns(pl.col(c).list.to_array(2) for c in ("conversation_a", "conversation_b")).write_parquet(arrays)
    assert isinstance(pl.read_parquet_schema(arrays)["conversation_a"], pl.Array)
    assert _leaderboard(arrays, "--style", "both") == _leaderboard(lists, "--style", "both")
    for path in (lists, arrays):
        ingested = arena("ingest", path, "--store", tmp_path / f"s-{path.stem}")
        assert ingested.exit_code == 0, ingested.output
        assert _quarantine(tmp_path / f"s-{path.stem}") == []


@pytest.mark.parametrize("fixture, needle", [
    ("decimal256-p10-in-struct.parquet", "column meta.price is a decimal within a struct, a list or a map that polars cannot read"),
    ("time-zone-offset.parquet", "the times of column created have the time zone '+05:30', which polars cannot read"),
    ("time-zone-offset-in-struct.parquet", "the times of column meta.created have the time zone '+05:30', which polars cannot read"),
    ("duplicate-columns.parquet", "two columns are named model_a: rename one"),
    ("list-view.parquet", "a column is of a type polars cannot read yet (a list view, say)"),
])
def test_parquet_types_polars_cannot_read_are_named_in_one_line(tmp_path, fixture, needle):
    """A type polars cannot read (it panics, or names damage) is said for what it is, in one line, exit 3, nothing
    stored; not "corrupt or truncated", not an internal error."""
    from pathlib import Path

    path = Path(__file__).parent / "fixtures" / "parquet" / fixture
    ingested = arena("ingest", path, "--store", tmp_path / "s")
    assert ingested.exit_code == 3, ingested.output
    one_line_error(ingested, needle)
    assert not (tmp_path / "s").exists()


def test_the_column_of_a_time_zone_polars_cannot_read_is_found_in_the_footer(tmp_path):
    """polars names the time zone it cannot read, not the column (the message said "a column's times"): the column
    is found in the Arrow schema of the file's footer, at any depth (polars' own writer's too), else not named."""
    from pathlib import Path

    from arena_cli.io.footer import time_zones
    from arena_cli.io.readers import corrupt_parquet

    fixture = Path(__file__).parent / "fixtures" / "parquet" / "time-zone-offset-in-struct.parquet"
    assert time_zones(fixture) == [("seen", "Asia/Kolkata"), ("meta.created", "+05:30")]
    when = pl.datetime(2025, 3, 1)
    path = tmp_path / "zones.parquet"
    _votes(3).with_columns(at=when.dt.replace_time_zone("UTC"), meta=pl.struct(when.dt.replace_time_zone("Europe/Paris").alias("t")),
                           times=pl.concat_list(when.dt.replace_time_zone("Asia/Tokyo")), naive=when).write_parquet(path)
    assert time_zones(path) == [("at", "UTC"), ("meta.t", "Europe/Paris"), ("times", "Asia/Tokyo")]
    error = pl.exceptions.ComputeError("unable to parse time zone: '+05:30'. Please check the Time Zone Database")
    assert "column meta.created have" in str(corrupt_parquet(fixture, error))
    assert str(corrupt_parquet(path, error)).startswith(f"{path}: a column's times have the time zone '+05:30'")  # (no such column: not named)
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(fixture.read_bytes()[:-200] + fixture.read_bytes()[-8:])
    assert time_zones(damaged) == [] and "a column's times have" in str(corrupt_parquet(damaged, error))


def test_a_column_of_an_extension_type_is_stored_as_its_storage_type(tmp_path):
    """An Arrow extension type (bool8: int8 storage) in an extra column is stored as its storage type's values (ingest
    ended in an internal error: polars cannot cast an extension type to text)."""
    from pathlib import Path

    path = Path(__file__).parent / "fixtures" / "parquet" / "extension-bool8.parquet"
    ingested = arena("ingest", path, "--store", tmp_path / "s")
    assert ingested.exit_code == 0, ingested.output
    assert Store.open(tmp_path / "s").read("battles", ["flag"])["flag"].to_list() == [1, 0, 1]


def test_conversations_whose_messages_are_bytes_are_read_as_their_text(tmp_path):
    """Messages whose role and content are bytes (as some writers store text) are conversations of the UTF-8 text
    they hold; one with bytes that are not UTF-8 is rejected as of the wrong type (never read as no conversation)."""
    message = pl.Struct({"role": pl.Binary(), "content": pl.Binary()})
    turns = [[{"role": b"user", "content": b"q"}, {"role": b"assistant", "content": b"# A\n" + b"word " * (i % 5 + 1)}] for i in range(60)]
    turns[7][1]["content"] = b"\xff\xfe"
    votes = _votes(60).with_columns(pl.Series("conversation_a", turns, dtype=pl.List(message)), pl.Series("conversation_b", turns[::-1], dtype=pl.List(message)))
    path = tmp_path / "bytes.parquet"
    votes.write_parquet(path)
    ingested = arena("ingest", path, "--store", tmp_path / "s")
    assert ingested.exit_code == 0, ingested.output
    assert _quarantine(tmp_path / "s") == [(8, "wrong_type", "conversation_a: bytes that are not UTF-8 in a message"),
                                           (53, "wrong_type", "conversation_b: bytes that are not UTF-8 in a message")]
    stored = Store.open(tmp_path / "s").read("battles", ["conversation_a"])["conversation_a"]
    assert stored[0].to_list() == [{"role": "user", "content": "q"}, {"role": "assistant", "content": "# A\nword "}]


def test_api_calls_given_the_wrong_kind_of_argument_raise_an_input_error(tmp_path):
    """A number, a LazyFrame, options of another type or a frame where a leaderboard is wanted: an InputError that
    says what to give (they raised TypeError, AttributeError, or read a path letter by letter); a single path, a
    single gate and a list of variants are taken as one would mean them."""
    import arena_cli as api
    from arena_cli.errors import InputError

    for call, needle in [(lambda: api.fit(5), "not int"), (lambda: api.fit(pl.LazyFrame({"a": [1]})), "collect() a LazyFrame first"),
                         (lambda: api.ingest(["x.csv"], tmp_path / "s", input="csv"), "input: an InputOptions"),
                         (lambda: api.compare(pl.DataFrame({"a": [1]}), pl.DataFrame({"a": [1]})), "not DataFrame")]:
        with pytest.raises(InputError, match=re.escape(needle)):
            call()
    path = tmp_path / "votes.parquet"
    _votes().with_columns(tokens_a=pl.int_range(pl.len()) % 50 + 10, tokens_b=pl.int_range(pl.len()) % 30 + 20).write_parquet(path)
    assert api.ingest(str(path), tmp_path / "s").summaries[0].stored == 120
    board = api.fit(str(path), ci="none", min_battles=1)
    assert api.compare(board, board, fail_on="rank-shift=1").failed == []
    assert list(api.rank_diff(str(path), ["none", "length"], ci="none", min_battles=1).variants) == ["none", "length"]


def test_output_to_a_dash_is_standard_output_and_a_field_mapped_twice_is_a_usage_error(tmp_path, monkeypatch):
    """-o - writes to standard output (it wrote a file named "-"), for a result and for an export (whose format is
    then given with --format); --map of one field to two columns is a usage error (the second one was taken)."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "votes.parquet"
    _votes().write_parquet(path)
    fitted = arena("fit", path, "--ci", "none", "--min-battles", "1", "-f", "csv", "-o", "-")
    assert fitted.exit_code == 0 and fitted.stdout.startswith("rank,rank_lower,rank_upper,model,score") and not (tmp_path / "-").exists()
    assert arena("ingest", path, "--store", tmp_path / "s").exit_code == 0
    exported = arena("export", "--store", tmp_path / "s", "-o", "-", "-f", "csv")
    assert exported.exit_code == 0 and len(exported.stdout.splitlines()) == 121 and not (tmp_path / "-").exists()
    assert arena("export", "--store", tmp_path / "s", "-o", "-").exit_code == 2
    mapped = arena("fit", path, "--map", "outcome=winner", "--map", "outcome=model_a")
    assert mapped.exit_code == 2 and "'outcome' is given twice: 'winner' and 'model_a'" in mapped.output
    # a report is a file; a name ending in / names a directory (it was written as a file of that name)
    assert arena("report", path, "--ci", "none", "--min-battles", "1", "-o", "-").exit_code == 2 and not (tmp_path / "-").exists()
    for command in ("fit", "report"):
        named = arena(command, path, "--ci", "none", "--min-battles", "1", "-o", "newdir/")
        assert named.exit_code == 3 and not (tmp_path / "newdir").exists()
        one_line_error(named, "cannot write newdir/: a name ending in / is a directory's")


def test_a_store_whose_every_row_was_quarantined_says_so_when_it_has_no_battles(tmp_path):
    """info and fit of a store that holds only quarantined rows say why there are no battles (exit 6, as for an
    empty store), with the reasons and where to read the rows."""
    path = _write(tmp_path / "votes.jsonl", b'{"model_a":"a","model_b":"a","winner":"model_a"}\n{"model_a":"a","model_b":"b","winner":"?"}\n')
    assert arena("ingest", path, "--store", tmp_path / "s").exit_code == 0
    for command in ("info", "fit"):
        result = arena(command, "--store", tmp_path / "s")
        assert result.exit_code == 6
        one_line_error(result, "has no battles yet: every row ingested was quarantined (self_battle 1, unknown_winner 1;", "--table quarantine")


def test_a_style_fit_of_battles_without_texts_or_counts_says_what_is_missing_and_what_to_do(tmp_path):
    """Every battle dropped for want of style features: the error says none has what they are computed from, and how
    to fit without them (exit 6), for fit and for report's variants."""
    path = tmp_path / "votes.parquet"
    _votes().write_parquet(path)
    for args in (["fit", path, "--style", "both"], ["report", path, "-o", tmp_path / "r.html"]):
        result = arena(*args, "--ci", "none", "--min-battles", "1")
        assert result.exit_code == 6
        one_line_error(result, "none of the 120 battle(s) has what the style features", "--style none")
