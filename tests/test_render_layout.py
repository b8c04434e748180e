"""The rendering layer: layouts (intervals, changes, emphasis) shown the same way by table, markdown and html;
html self-contained; markdown figures written next to the file; every format has exactly one renderer."""

from __future__ import annotations

import io
import json

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena_cli.render import Document, OutputFormat, Table, emit, render
from arena_cli.render.display import shown
from arena_cli.render.document import Column, Figure
from arena_cli.render.emit import RENDERERS

FRAME = pl.DataFrame(
    {
        "model": ["a|b", "c", "d"],
        "rank": [1, 2, None],
        "lo": [1, 1, None],
        "hi": [2, 3, None],
        "score": [1010.04, 990.0, None],
        "change": [2, -1, 0],
        "drift": [0.04, -12.25, None],
        "big": [True, False, None],
    }
)
LAYOUT = (
    Column("model", "model"),
    Column("rank", "rank", "lo", "hi"),
    Column("score", "score", digits=1),
    Column("Δ", "change", change=True, strong="big"),
    Column("drift", "drift", digits=1, change=True),
)


def doc(**kwargs) -> Document:
    return Document("test", (Table("t", FRAME, "A [bracketed] title", notes=("a note with [brackets]",), layout=LAYOUT),), meta={"seed": 1}, title="Test", **kwargs)


def test_every_format_has_one_renderer():
    assert set(RENDERERS) == set(OutputFormat)


def test_layout_cells():
    view = shown(doc().primary)
    assert view.headers == ["model", "rank", "score", "Δ", "drift"]
    assert view.numeric == [False, True, True, True, True]
    assert [c.text for c in view.rows[0]] == ["a|b", "1 [1, 2]", "1010.0", "+2", "0.0"]  # a change that rounds to zero has no sign
    assert [c.text for c in view.rows[1]] == ["c", "2 [1, 3]", "990.0", "-1", "-12.2"]
    assert [c.text for c in view.rows[2]] == ["d", "—", "—", "0", "—"]
    assert view.rows[0][3].strong and not view.rows[1][3].strong
    assert (view.rows[1][3].direction, view.rows[1][3].magnitude) == (-1, "1")


def test_markdown_uses_the_layout_and_escapes_pipes():
    text = render(doc(), OutputFormat.markdown).decode()
    assert "| model | rank | score | Δ | drift |" in text
    assert "| a\\|b | 1 [1, 2] | 1010.0 | **+2** | 0.0 |" in text
    assert "a note with [brackets]" in text


def test_markdown_cells_show_model_names_as_they_are():
    """A name with markdown's marks shows them, not code, emphasis, html or a link (they were rendered so)."""
    from arena_cli.render.display import Cell
    from arena_cli.render.text import _markdown_cell

    assert _markdown_cell(Cell("`code` **bold** <b> [l](http://e)")) == "\\`code\\` \\*\\*bold\\*\\* \\<b\\> [l]\\(http://e)"
    assert _markdown_cell(Cell("gpt-4_turbo 3 [2, 5]")) == "gpt-4_turbo 3 [2, 5]"


def test_machine_formats_keep_the_frame():
    payload = json.loads(render(doc(), OutputFormat.json))
    assert payload["tables"]["t"][0] == {"model": "a|b", "rank": 1, "lo": 1, "hi": 2, "score": 1010.04, "change": 2, "drift": 0.04, "big": True}
    assert render(doc(), OutputFormat.csv).decode().splitlines()[0] == "model,rank,lo,hi,score,change,drift,big"


def test_table_file_is_plain_and_terminal_has_coloured_arrows():
    plain = render(doc(), OutputFormat.table).decode()
    assert "+2*" in plain and "-1 " in plain and "↑" not in plain  # * marks emphasis in a plain file
    assert "A [bracketed] title" in plain and "a note with [brackets]" in plain  # not eaten as markup
    from rich.console import Console

    from arena_cli.render.text import print_rich

    console = Console(file=io.StringIO(), force_terminal=True, color_system="standard", width=120)
    print_rich(doc(), console)
    out = console.file.getvalue()
    assert "↑2" in out and "↓1" in out and "\x1b[" in out


def test_html_is_self_contained_and_escaped():
    page = render(doc(), OutputFormat.html).decode()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<script" not in page and "<link" not in page and "src=" not in page
    assert '<span class="up">↑2</span>' in page and '<span class="down">↓1</span>' in page
    assert "<strong>" in page and "a|b" in page and "A [bracketed] title" in page
    assert "&quot;seed&quot;: 1" in page  # settings at the end


def _figure() -> Figure:
    def draw():
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(2, 1.5))
        ax.plot([0, 1, 2], [1, 0, 2])
        return fig

    return Figure("line", "A line", draw, caption="Three points.", after="t")


def test_html_inlines_figures_as_svg_deterministically():
    first = render(doc(figures=(_figure(),)), OutputFormat.html)
    assert first == render(doc(figures=(_figure(),)), OutputFormat.html)
    page = first.decode()
    assert page.count("<svg") == 1 and "Three points." in page
    assert page.index("<svg") > page.index("a note with")  # after its anchor table


def test_markdown_file_links_png_written_beside_it(tmp_path, capsysbinary):
    target = tmp_path / "out" / "report.md"
    emit(doc(figures=(_figure(),)), None, target)
    text = target.read_text()
    assert "![A line](report-line.png)" in text
    assert (tmp_path / "out" / "report-line.png").read_bytes().startswith(b"\x89PNG")
    emit(doc(figures=(_figure(),)), OutputFormat.markdown, None)
    assert b"![" not in capsysbinary.readouterr().out  # on stdout there is nowhere to put the image


@pytest.mark.parametrize("fmt", [f for f in OutputFormat if f is not OutputFormat.table])
def test_emit_writes_every_format_to_a_file(tmp_path, fmt):
    target = tmp_path / f"out.{fmt.value}"
    emit(doc(), fmt, target)
    assert target.read_bytes() == render(doc(), fmt)


# ------------------------------------------------------------------------- sections, settings, plot fonts


def _no_rows_report() -> Document:
    """A report whose highlights and quarantine are empty: nothing moved, nothing was rejected."""
    from arena_cli import comparison, info, pairwise
    from arena_cli.results import Report
    from tests import compare_fixtures as fx

    same = {v: fx.leaderboard("none") for v in fx.VARIANTS}
    diff = comparison.compare_variants(same, fx.all_coefficients(), fx.VARIANTS)
    summary = info.summarize(fx.battles(), quarantine=pl.DataFrame({"reason": [], "rows": []}, schema={"reason": pl.String, "rows": pl.Int64}))
    return Report(summary, diff, same, pairwise.pairwise_counts(fx.battles()), "fixture").to_document()


@pytest.mark.parametrize("fmt", [OutputFormat.markdown, OutputFormat.html, OutputFormat.table])
def test_empty_sections_are_a_sentence_not_a_header_only_table(fmt):
    text = render(_no_rows_report(), fmt).decode()
    assert "No significant shift, and no model entered or left the top 10." in " ".join(text.split())
    assert "No rows quarantined" in text
    assert "place before" not in text  # the highlights' header row is not drawn
    if fmt is OutputFormat.html:
        assert '<p class="empty">No rows quarantined' in text


def test_ties_and_anchor_are_noted_under_the_tables():
    import arena_cli as arena
    from tests.sim_battles import simulate

    frame, _ = simulate(3000, 6, seed=4)
    board = arena.fit(frame, ties="davidson", anchor=("model-002", 1200), rounds=20, workers=1)
    nu = board.settings["tie_parameter"]
    text = " ".join(render(board.to_document(), OutputFormat.table).decode().split())
    assert f"tie parameter ν = {nu['nu']:.3f} [{nu['lower']:.3f}, {nu['upper']:.3f}]" in text
    assert "Anchored: model-002 is fixed at 1200" in text
    assert json.loads(render(board.to_document(), OutputFormat.json))["meta"]["settings"]["anchor"] == {"model": "model-002", "score": 1200.0}
    diff = arena.rank_diff(frame, "none,length", ties="davidson", anchor=("model-002", 1200), rounds=20, workers=1)
    text = " ".join(render(diff.to_document(), OutputFormat.markdown).decode().split())
    per_variant = diff.settings["per_variant"]
    assert "tie parameter ν per variant: none " in text and f"length {per_variant['length']['tie_parameter']['nu']:.3f}" in text
    assert "Anchored: model-002 is fixed at 1200" in text


def test_font_fallback_names_only_installed_cjk_fonts():
    from arena_cli.render.figures import font_families

    assert font_families(["DejaVu Sans", "Liberation Serif"]) == ["DejaVu Sans"]
    assert font_families(["WenQuanYi Zen Hei", "Noto Sans CJK JP"]) == ["DejaVu Sans", "Noto Sans CJK JP", "WenQuanYi Zen Hei"]


def test_plots_of_cjk_model_names_print_no_glyph_warnings(capfd):
    import warnings

    from arena_cli.render import plots
    from arena_cli.render.figures import png_bytes, svg_text

    board = pl.DataFrame({"model": ["通义千问-max", "文心一言", "gpt-4"], "score": [1100.0, 1000.0, 900.0],
                          "score_lower": [1090.0, 990.0, 890.0], "score_upper": [1110.0, 1010.0, 910.0]})
    figure = Figure("forest", "Scores", lambda: plots.forest_plot({"none": board}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning left unfiltered fails the test
        assert "<svg" in svg_text(figure) and png_bytes(figure).startswith(b"\x89PNG")
    assert capfd.readouterr().err == ""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("Glyph 1 (x) missing from font(s) DejaVu Sans.", UserWarning)
    assert caught, "the filter is scoped to drawing, not installed for the whole process"


#: Model names: mostly of the characters names have (each table then draws some on the direct path), some of any.
_MODEL_NAMES = st.lists(st.sampled_from([*"abz019-_. /", "模型", "é", "[b]", " ", "😀", "ｗ"]), max_size=8).map("".join) | st.lists(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")), max_size=6).map("".join)
#: Names that a cell cannot show on one line as they are, or whose characters rich removes or expands.
_BROKEN_NAMES = st.sampled_from(["a\tb", "x\ny", "\n", "line one\nline two", "a\rb", "bell\x07", "\x1b[31mred", "zero\u200bwidth"])
#: Titles and notes: mostly ones that fit (drawn directly), some that rich must wrap or expand.
_TITLES = st.sampled_from(["", "A title", "Title", "模型 table", " padded ", "A title much longer than the narrowest of these tables", "tab\there"])
_NOTES = st.lists(st.sampled_from(["a note", "", "two\nlines", "a note long enough to need wrapping at the narrow widths that these tests "
                                   "draw at, and wider still than a hundred columns, where notes wrap", "tab\tnote"]), max_size=3)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    names=st.lists(_MODEL_NAMES, min_size=1, max_size=12),
    broken=st.sampled_from([None] * 3) | _BROKEN_NAMES,
    title=_TITLES,
    notes=_NOTES,
    data=st.data(),
    terminal=st.booleans(),
    width=st.sampled_from([None, 24, 40, 80]),
)
def test_a_plain_table_written_directly_is_the_table_rich_draws(names, broken, title, notes, data, terminal, width):
    """In a file or a pipe a table is written line by line without rich (a fiftieth of the time); the text is the
    same as rich draws, for any names (wide characters, empty, markup-like; with a tab, a line break or a control
    character, left to rich), titles and notes (short, long, several lines), changes and emphasis, at any width.
    On a terminal rich always draws."""
    from rich.console import Console

    from arena_cli.render import text as text_module

    if broken is not None:
        names = [*names[:-1], broken]
    n = len(names)
    frame = pl.DataFrame({
        "model": names,
        "rank": data.draw(st.lists(st.none() | st.integers(1, 999), min_size=n, max_size=n)),
        "change": data.draw(st.lists(st.none() | st.integers(-50, 50), min_size=n, max_size=n)),
        "big": data.draw(st.lists(st.booleans(), min_size=n, max_size=n)),
        "score": data.draw(st.lists(st.none() | st.floats(-1e4, 1e4), min_size=n, max_size=n)),
    }, schema_overrides={"rank": pl.Int64, "change": pl.Int64, "score": pl.Float64})
    # a numeric column headed by a name (as a matrix's are), which may end in spaces
    layout = (Column("model", "model"), Column("rank", "rank"), Column("Δ", "change", change=True, strong="big", priority=1),
              Column("score", "score", digits=1, priority=2), Column(names[0] or "x", "rank", priority=3))
    document = Document("t", (Table("t", frame, title, notes=tuple(notes), layout=layout),), meta={})
    written = []

    def drawn() -> str:
        console = Console(file=io.StringIO(), force_terminal=terminal, color_system="standard" if terminal else None, width=width or 80)
        text_module.print_tables(document, console, width)
        return console.file.getvalue()

    original = text_module._plain_lines

    def recorded(*args):
        lines = original(*args)
        written.append(lines is not None)
        return lines

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_module, "_plain_lines", recorded)
        direct = drawn()
        patch.setattr(text_module, "_plain_lines", lambda *args: None)
        by_rich = drawn()
    assert direct == by_rich
    assert not (terminal and written), "a terminal's tables are drawn by rich"


@pytest.mark.parametrize("title, header", [("Title", "score"), ("Titles", "score"), ("", "score  "), ("模型 title", " score"), (" padded  ", "score"), ("A title wider than the table, which rich widens to it", "coefficient"), ("Title one too wide", "score")])
def test_ordinary_plain_tables_are_written_directly_as_rich_draws_them(title, header):
    """The cases the property test above may miss: titles centred with an odd or an even margin, a title wider than
    the table (rich widens the columns to it, each in proportion to its width), and a right-aligned header with
    spaces around it (rich strips those after it). Such tables take the direct path, with rich's text."""
    from rich.console import Console

    from arena_cli.render import text as text_module

    frame = pl.DataFrame({"model": ["gpt-4", "模型", ""], "score": [1.5, -2.0, None]})
    document = Document("t", (Table("t", frame, title, notes=("a note",), layout=(Column("model", "model"), Column(header, "score"))),), meta={})

    def drawn() -> str:
        console = Console(file=io.StringIO(), color_system=None)
        text_module.print_tables(document, console, None)
        return console.file.getvalue()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_module, "table_renderables", None)  # (rich is not called at all)
        direct = drawn()
        patch.undo()
        patch.setattr(text_module, "_plain_lines", lambda *args: None)
        assert direct == drawn()


def test_a_matrix_header_named_like_markup_is_shown_as_it_is():
    """A header is text, not rich markup: a model named ``[b]x`` heads its column as ``[b]x``, on a terminal too."""
    from rich.console import Console

    from arena_cli.render.text import print_tables

    frame = pl.DataFrame({"model": ["y"], "[b]x": [0.5]})
    document = Document("t", (Table("t", frame, "T"),), meta={})
    for terminal in (False, True):
        console = Console(file=io.StringIO(), force_terminal=terminal, color_system="standard" if terminal else None, width=80)
        print_tables(document, console, 80)
        assert "[b]x" in console.file.getvalue()


def test_a_terminal_table_keeps_each_cells_style_over_its_padding():
    """On a terminal a styled cell's padding takes its style (``\\x1b[1;32m ↑2``): drawn row by row, as before."""
    from rich.console import Console

    from arena_cli.render.text import print_tables

    frame = pl.DataFrame({"model": ["a", "bbbbbb"], "change": [2, -13], "big": [True, False]})
    layout = (Column("model", "model"), Column("Δ", "change", change=True, strong="big"))
    console = Console(file=io.StringIO(), force_terminal=True, color_system="standard", width=80)
    print_tables(Document("t", (Table("t", frame, "T", layout=layout),), meta={}), console, 80)
    assert "│ \x1b[1;32m ↑2\x1b[0m │" in console.file.getvalue()
