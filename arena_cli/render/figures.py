"""Figures to bytes: matplotlib (Agg, no display needed) with fixed metadata, so the same data gives the same
SVG and PNG bytes on one installation. Imported only when a format shows plots."""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from arena_cli.render.document import Figure

#: Fonts that draw CJK model names, tried in this order after DejaVu Sans (which has no CJK glyphs) for any
#: character it lacks; only those installed are named, so matplotlib never looks for a missing one.
CJK_FONTS = (
    "Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans CJK KR", "Noto Sans SC", "Noto Sans JP",
    "Source Han Sans", "Source Han Sans SC", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "Droid Sans Fallback",
    "IPAexGothic", "IPAGothic", "NanumGothic", "Microsoft YaHei", "SimHei", "PingFang SC", "Hiragino Sans",
    "Yu Gothic", "Malgun Gothic", "Arial Unicode MS",
)


def font_families(installed: Iterable[str]) -> list[str]:
    """DejaVu Sans (matplotlib's own, always there), then every installed font of :data:`CJK_FONTS`."""
    names = set(installed)
    return ["DejaVu Sans", *(font for font in CJK_FONTS if font in names)]


@contextmanager
def _plotting() -> Iterator[Any]:
    """pyplot set up for a figure: text as paths (the SVG needs no installed font), a fixed hash salt (the same
    ids on every run), fonts with a CJK fallback when one is installed, and no warning per glyph the fonts
    lack (without a CJK font such a name shows boxes: one figure would otherwise print dozens of warnings)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    families = font_families(font.name for font in font_manager.fontManager.ttflist)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        with plt.rc_context({"svg.fonttype": "path", "svg.hashsalt": "arena-cli", "font.family": families}):
            yield plt


def svg_text(figure: Figure) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog, no date)."""
    buffer = io.StringIO()
    with _plotting() as plt:
        drawn = figure.draw()
        # No metadata at all: no date (same bytes every run), and no RDF block naming vocabularies by URL.
        drawn.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
        plt.close(drawn)
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]


def png_bytes(figure: Figure, dpi: int = 110) -> bytes:
    """The figure as a PNG file (for markdown, which links images)."""
    buffer = io.BytesIO()
    with _plotting() as plt:
        drawn = figure.draw()
        drawn.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
        plt.close(drawn)
    return buffer.getvalue()
