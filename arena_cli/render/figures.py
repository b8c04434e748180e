"""Figures to bytes: matplotlib (Agg, no display needed) with fixed metadata, so the same data gives the same
SVG and PNG bytes on one installation. Imported only when a format shows plots."""

from __future__ import annotations

import io
import re

from arena_cli.render.document import Figure


def _drawn(figure: Figure):
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    # Text as paths: the SVG needs no installed font. A fixed hash salt: the same ids on every run.
    with plt.rc_context({"svg.fonttype": "path", "svg.hashsalt": "arena-cli", "font.family": "DejaVu Sans"}):
        drawn = figure.draw()
    return drawn


def svg_text(figure: Figure) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog, no date)."""
    import matplotlib.pyplot as plt

    drawn = _drawn(figure)
    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "path", "svg.hashsalt": "arena-cli"}):
        # No metadata at all: no date (same bytes every run), and no RDF block naming vocabularies by URL.
        drawn.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    plt.close(drawn)
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]


def png_bytes(figure: Figure, dpi: int = 110) -> bytes:
    """The figure as a PNG file (for markdown, which links images)."""
    import matplotlib.pyplot as plt

    drawn = _drawn(figure)
    buffer = io.BytesIO()
    drawn.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    plt.close(drawn)
    return buffer.getvalue()
