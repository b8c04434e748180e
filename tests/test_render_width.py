"""Tables never hide a result, at any terminal width: every table of every command, drawn at 60 to 240
columns, shows each number of its JSON intact (no ``…``, nothing cut), every column either shown or named
in a note, and no line wider than the terminal; a pipe or file shows every column in full."""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

import arena_cli as arena
from arena_cli.cli import app
from arena_cli.render import Document, OutputFormat, render
from arena_cli.render.display import MISSING, shown
from arena_cli.render.document import Table
from arena_cli.render.text import NOT_SHOWN, print_rich
from arena_cli.render.width import drawn_width, plan
from tests import compare_fixtures as fx
from tests.sim_battles import simulate

WIDTHS = (60, 80, 100, 120, 160, 200, 240)
#: Model names that must fold: double-width characters, and a name longer than a narrow terminal.
NAMES = {
    "model-000": "通义千问-max-2025-01-25-preview",
    "model-001": "an-extremely-long-model-name-from-a-vendor-v2.5-instruct-preview-2025-06",
}
NUMBER = re.compile(r"\d+(?:\.\d+)?")


@pytest.fixture(scope="module")
def battles() -> pl.DataFrame:
    frame, _ = simulate(3000, 8, seed=5)
    return frame.with_columns(pl.col("model_a", "model_b").replace(NAMES))


@pytest.fixture(scope="module")
def ingest_report(tmp_path_factory) -> arena.IngestReport:
    """Two sources with long paths, one with rows quarantined for several reasons."""
    root = tmp_path_factory.mktemp("ingest") / "a-rather-long-directory-name-for-the-nightly-vote-exports"
    root.mkdir()
    log = fx.write_simulated_log(root)
    bad = root / "votes-with-problems-exported-from-the-annotation-tool.jsonl"
    rows = [
        {"model_a": "a", "model_b": "b", "winner": "model_a"},
        {"model_a": "a", "model_b": "a", "winner": "model_a"},
        {"model_a": "a", "model_b": "b", "winner": "maybe"},
        {"model_a": "", "model_b": "b", "winner": "tie"},
    ]
    bad.write_text("\n".join([*(json.dumps(r) for r in rows), "{not json"]) + "\n")
    return arena.ingest([log, bad], root / "store")


@pytest.fixture(scope="module")
def documents(battles, ingest_report) -> dict[str, Document]:
    fast = {"rounds": 30, "workers": 1}
    fit = arena.fit(battles, style="both", **fast)
    without = battles.filter((pl.col("model_a") != "model-003") & (pl.col("model_b") != "model-003"))
    old = arena.fit(without, **fast)
    return {
        "fit": fit.to_document(),
        "diff": arena.rank_diff(battles, "none,length,markdown,both", **fast).to_document(),
        "compare": arena.compare(old, fit, fail_on=["rank-shift=1", "models-changed"]).to_document(),
        "matrix": arena.matrix(battles).to_document(),
        "matrix-long": arena.matrix(battles, long=True).to_document(),
        "info": arena.describe(battles).to_document(),
        "features-list": arena.feature_list().to_document(),
        "ingest": ingest_report.to_document(),
        "report": arena.report(battles, **fast).to_document(),
        "fit-win-rate": arena.fit(battles, style="length", position_bias=True, baseline_model="model-002", **fast).to_document(),
        "diff-win-rate": arena.rank_diff(battles, "none,both", baseline_model="model-002", **fast).to_document(),
    }


def _drawn(table: Table, width: int) -> str:
    console = Console(file=io.StringIO(), force_terminal=True, color_system=None, width=width)
    print_rich(Document("test", (table,)), console)
    return console.file.getvalue()


def _cells(line: str, rule: str) -> list[str]:
    return line.split(rule)[1:-1]


def _headers(text: str) -> set[str]:
    """Every column header drawn (a header wrapped or folded over several lines joined, spaces removed)."""
    headers: set[str] = set()
    block: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("┃"):
            block.append(_cells(line, "┃"))
        elif block:
            headers.update("".join("".join(parts).split()) for parts in zip(*block))
            block = []
    return headers


def _dropped(text: str) -> set[str]:
    """The columns a note says are not shown (spaces removed, to compare with :func:`_headers`)."""
    words = " ".join(text.split())
    named = re.findall(rf"{NOT_SHOWN} \d+ columns: (.*?)\. A wider terminal", words)
    return {"".join(name.split()) for names in named for name in names.split(", ")}


def _shown_numbers(table: Table, rows: list[dict], headers: set[str]) -> Counter:
    """The numbers of the JSON rows in the shown columns, written as the table writes them (the layout's
    decimals, a range ``a–b`` as one number when both ends are equal, changes without their sign)."""
    expected: Counter = Counter()

    def text(value, digits, percent=False):
        if isinstance(value, bool) or value is None:
            return None
        if isinstance(value, float) and digits is not None:
            return f"{abs(value) * (100 if percent else 1):.{digits}f}"
        return str(abs(value)) if isinstance(value, (int, float)) else None

    if not table.layout:
        for row in rows:
            for name, value in row.items():
                if "".join(name.split()) in headers:
                    expected.update(NUMBER.findall(text(value, table.float_digits.get(name)) or ""))
        return expected
    for column in table.layout:
        if "".join(column.header.split()) not in headers:
            continue
        digits = column.digits if column.digits is not None else table.float_digits.get(column.value)
        for row in rows:
            value = text(row[column.value], digits, column.percent)
            if value is None:
                continue
            parts = [value]
            if column.lower and column.upper and row[column.lower] is not None:
                parts += [text(row[column.lower], digits, column.percent), text(row[column.upper], digits, column.percent)]
            if column.through and text(row[column.through], digits) not in (None, value):
                parts.append(text(row[column.through], digits))
            expected.update(n for part in parts if part for n in NUMBER.findall(part))
    return expected


def check_table(table: Table, rows: list[dict], width: int) -> None:
    text = _drawn(table, width)
    lines = text.splitlines()
    assert all(cell_len(line) <= width for line in lines), f"{table.name}: a line wider than {width}"
    assert "…" not in text, f"{table.name}: something cut at {width} columns"
    if not table.frame.height:
        assert table.empty_sentence in " ".join(text.split())
        return
    headers, dropped = _headers(text), _dropped(text)
    for header in shown(table).headers:
        key = "".join(header.split())
        assert (key in headers) != (key in dropped), f"{table.name} at {width}: column {header!r} neither shown nor named in a note"
    body = Counter(n for line in lines if line.startswith("│") for n in NUMBER.findall("".join(_cells(line, "│"))))
    missing = _shown_numbers(table, rows, headers) - body
    assert not missing, f"{table.name} at {width} columns: numbers not shown intact: {dict(missing)}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["fit", "diff", "compare", "matrix", "matrix-long", "info", "features-list", "ingest", "report", "fit-win-rate", "diff-win-rate"])
def test_every_table_shows_its_numbers_at_every_width(documents, name, width):
    doc = documents[name]
    payload = json.loads(render(doc, OutputFormat.json))
    for table in doc.readable_tables:
        check_table(table, payload["tables"][table.name], width)


@pytest.mark.parametrize("name", ["report", "diff", "compare", "fit-win-rate", "diff-win-rate"])
def test_markdown_shows_every_number(documents, name):
    """Markdown has no width: every column, every number of the JSON, whatever the terminal."""
    doc = documents[name]
    payload = json.loads(render(doc, OutputFormat.json))
    for table in doc.readable_tables:
        text = render(Document("test", (table,)), OutputFormat.markdown).decode()
        if not table.frame.height:
            assert table.empty_sentence in text and "|" not in text
            continue
        rows = [line for line in text.splitlines() if line.startswith("|")]
        headers = {"".join(h.split()) for h in rows[0].strip("|").split(" | ")}
        assert headers == {"".join(h.split()) for h in shown(table).headers}
        body = Counter(n for line in rows[2:] for n in NUMBER.findall(line))
        assert not _shown_numbers(table, payload["tables"][table.name], headers) - body, table.name


def test_narrow_terminals_drop_columns_with_a_note_and_stack_variants(documents):
    diff = _drawn(documents["diff"].primary, 80)
    assert "both Δ" in " ".join(diff.split()) or "bothΔ" in _headers(diff)
    assert {"nonescore", "bothscore"} <= _dropped(diff)
    assert "-f json" in diff
    matrix = _drawn(documents["matrix"].primary, 80)
    assert "(1 of " in matrix and "model repeated in each" in " ".join(matrix.split())


def test_a_pipe_shows_every_column_in_full(documents):
    text = render(documents["diff"], OutputFormat.table).decode()
    assert NOT_SHOWN not in text and "…" not in text
    assert {"".join(h.split()) for h in shown(documents["diff"].primary).headers} <= _headers(text)


@pytest.mark.parametrize("width", [60, 100])
def test_cli_fits_piped_tables_to_columns_when_set(ingest_report, width):
    log = ingest_report.summaries[0].as_dict()["source"]  # the simulated log: LMArena counts, no texts (fast)
    runner = CliRunner()
    result = runner.invoke(app, ["diff", log, "--rounds", "5", "--workers", "1"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    assert max(cell_len(line) for line in result.stdout.splitlines()) <= width
    assert f"{NOT_SHOWN} {width} columns" in " ".join(result.stdout.split())
    piped = runner.invoke(app, ["fit", log, "--ci", "none"], env={"COLUMNS": None})
    assert NOT_SHOWN not in piped.stdout and "losses" in piped.stdout


def test_ingest_summary_folds_paths_and_reasons_rather_than_cutting_them(ingest_report, tmp_path):
    source = Path(ingest_report.summaries[1].as_dict()["source"])
    result = CliRunner().invoke(app, ["ingest", str(source), "--store", str(tmp_path / "s")], env={"COLUMNS": "60"})
    assert result.exit_code == 0, result.output
    drawn = result.stderr if hasattr(result, "stderr") else result.output
    assert "…" not in drawn and max(cell_len(line) for line in drawn.splitlines()) <= 60
    columns = ["".join("".join(parts).split()) for parts in zip(*(_cells(line, "│") for line in drawn.splitlines() if line.startswith("│")))]
    assert columns[0] == str(source).replace(" ", "")
    assert columns[-1] == "missing_model1,self_battle1,unknown_winner1,unparseable1"


# ------------------------------------------------------------------------------------- the width plan


texts = st.text(st.sampled_from("ab 通-.1"), max_size=30)


@settings(max_examples=200, deadline=None)
@given(
    columns=st.lists(st.tuples(texts, st.lists(texts, min_size=3, max_size=3), st.booleans(), st.integers(0, 3), st.sampled_from([None, "g", "h"])), min_size=1, max_size=12),
    width=st.integers(20, 200),
)
def test_plan_never_cuts_a_number_and_accounts_for_every_column(columns, width):
    headers = [c[0] for c in columns]
    cells = [c[1] for c in columns]
    numeric = [c[2] for c in columns]
    result = plan(headers, cells, numeric, [c[3] for c in columns], [c[4] for c in columns], width)
    placed = {k for block in result.blocks for k in block.columns}
    assert placed | set(result.dropped) == set(range(len(columns))) and not placed & set(result.dropped)
    assert all(columns[k][3] > 0 for k in result.dropped)  # only columns that may give way do
    for block in result.blocks:
        for k, w in zip(block.columns, block.widths):
            if numeric[k]:
                assert w >= max(cell_len(t) for t in cells[k])  # a number is never broken
        assert block.width == drawn_width(block.widths)
        assert block.width <= width or result.overflows
    if not result.overflows:
        assert all(block.width <= width for block in result.blocks)


def test_plan_without_width_shows_every_column_at_its_natural_width():
    result = plan(["model", "score"], [["alpha"], ["1010.0"]], [False, True], [0, 1], [None, None], None)
    assert result.blocks[0].widths == (5, 6) and not result.dropped and not result.overflows


def test_placeholders_are_not_numbers():
    assert NUMBER.findall(MISSING) == []
