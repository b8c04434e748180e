"""The report's plots, drawn with matplotlib from the same frames the tables show.

Each function returns a matplotlib ``Figure``; :mod:`arena_cli.render.figures` turns it into SVG or PNG.
matplotlib is imported inside the functions (only ``arena report`` needs it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

UP, DOWN, SAME = "#1a7f37", "#cf222e", "#8c959f"
#: Labels of unemphasised lines: darker than their light grey lines, so small text stays readable.
LABEL = "#57606a"
SERIES = ("#8c959f", "#0969da", "#bf8700", "#8250df", "#1a7f37", "#cf222e")

#: Width in inches the html page shows a figure at its natural size (its 1200 px column at 96 px per inch);
#: a wider figure is scaled down to fit, and its text with it.
PAGE_WIDTH = 12.0


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _height(rows: int, per_row: float = 0.2, minimum: float = 3.0) -> float:
    return max(minimum, per_row * rows + 1.2)


def _text_width(labels: Sequence[str], fontsize: float, bold: bool = False) -> float:
    """Width in inches of the widest label as matplotlib draws it (measured, not guessed from its length), so
    that figures are sized to leave long model names neither cut off nor squeezed."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextPath

    prop = FontProperties(size=fontsize, weight="bold" if bold else "normal")
    return max((TextPath((0, 0), str(label), prop=prop).get_extents().width for label in set(labels)), default=0.0) / 72


def forest_plot(leaderboards: Mapping[str, pl.DataFrame]):
    """Score and interval of every model under each given variant, one row per model, ordered by the last
    variant's score; the variants are drawn as slightly offset markers of different colours."""
    plt = _pyplot()
    names = list(leaderboards)
    last = leaderboards[names[-1]].sort(["score", "model"], descending=[True, False])
    order = last["model"].to_list()
    for name in names[:-1]:
        order += [m for m in leaderboards[name].sort("score", descending=True)["model"].to_list() if m not in order]
    index = {m: i for i, m in enumerate(order)}
    fig, ax = plt.subplots(figsize=(8.5, _height(len(order))))
    step = 0.6 / max(1, len(names))
    for k, name in enumerate(names):
        board = leaderboards[name]
        y = [index[m] + (k - (len(names) - 1) / 2) * step for m in board["model"].to_list()]
        colour = SERIES[(k + (0 if len(names) > 1 else 1)) % len(SERIES)]
        # the interval is drawn between its ends, not as distances from the score: from few bootstrap rounds
        # it can exclude its own estimate
        ends = [board[end].fill_null(board["score"]).to_numpy() for end in ("score_lower", "score_upper")]
        ax.hlines(y, *ends, colors=colour, linewidth=1)
        ax.plot(board["score"].to_numpy(), y, "o", markersize=3, color=colour, label=name)
    ax.set_yticks(range(len(order)), order, fontsize=7)
    ax.set_ylim(len(order) - 0.4, -0.6)
    ax.set_xlabel("score (interval)")
    ax.grid(axis="x", color="#d0d7de", linewidth=0.5)
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=len(names), fontsize=8, frameon=False)
    _tight(fig)
    return fig


def _tight(fig) -> None:
    """The figure's layout fitted to its labels; where they cannot fit (a model name of hundreds of characters),
    left as it is, without matplotlib's warning on the user's terminal."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()


def slope_chart(positions: pl.DataFrame, variants: Sequence[str], shifted: str | None = None):
    """Where each model stands (1 = highest score) under each variant, one line per model across variants.

    ``positions`` has ``model`` and ``position_<variant>`` columns; ``shifted`` names a boolean column: those
    models are coloured (green rising, red falling), the rest grey.
    """
    plt = _pyplot()
    n = positions.height
    first, last = f"position_{variants[0]}", f"position_{variants[-1]}"
    fontsize = 6.5
    # Room beside the outer variants for the longest "model position" label; the variants share the rest.
    labels = [f"{m} {n}" for m in positions["model"].to_list()]
    margin = _text_width(labels, fontsize, bold=True) + 0.2
    gaps = max(1, len(variants) - 1)
    spacing = min(2.2, max(1.0, (PAGE_WIDTH - 2 * margin - 0.4) / gaps))
    width = max(6.0, spacing * gaps + 2 * margin + 0.4)
    spacing = (width - 2 * margin - 0.4) / gaps
    fig, ax = plt.subplots(figsize=(width, _height(n, 0.2)))
    x = list(range(len(variants)))
    for row in positions.sort(last).iter_rows(named=True):
        ys = [row[f"position_{v}"] for v in variants]
        emphasised = bool(row[shifted]) if shifted else False
        colour = SAME
        if emphasised and ys[-1] is not None and ys[0] is not None:
            colour = UP if ys[-1] < ys[0] else DOWN
        ax.plot(x, ys, color=colour, linewidth=1.6 if emphasised else 0.8, alpha=1.0 if emphasised else 0.6, marker="o", markersize=2.5)
        weight = "bold" if emphasised else "normal"
        text_colour = colour if emphasised else LABEL
        if row[first] is not None:
            ax.text(-0.08, row[first], f"{row['model']} {row[first]}", ha="right", va="center", fontsize=fontsize, color=text_colour, fontweight=weight)
        if row[last] is not None:
            ax.text(x[-1] + 0.08, row[last], f"{row[last]} {row['model']}", ha="left", va="center", fontsize=fontsize, color=text_colour, fontweight=weight)
    ax.set_xticks(x, list(variants))
    ax.xaxis.tick_top()
    ax.set_ylim(n + 0.6, 0.4)
    reach = (margin + 0.1) / spacing  # the label margin in units of the variants' spacing
    ax.set_xlim(-reach, x[-1] + reach)
    ax.set_yticks([])
    for side in ("left", "right", "bottom", "top"):
        ax.spines[side].set_visible(False)
    _tight(fig)
    return fig


def heatmaps(win_rate: pl.DataFrame, battles: pl.DataFrame):
    """Two model × model heatmaps: win rate of the row model (ties half) and battle counts. Both frames have
    ``model`` then one column per opponent, in the same order.

    Cells are sized to the labels' font and the axes placed by hand around the measured model names, so every
    name stays whole and readable at the size the page shows: the two panels side by side while they fit the
    page's width (scaled down by 10% at most), else one above the other, each then with the whole width.
    """
    import numpy as np
    from matplotlib.colors import Normalize, PowerNorm

    plt = _pyplot()
    models = win_rate["model"].to_list()
    n = len(models)
    rates = win_rate.drop("model").cast(pl.Float64).to_numpy()
    counts = battles.drop("model").cast(pl.Float64).to_numpy()
    fontsize = 7 if n <= 30 else 6
    # In inches: a square grid, the names left of it and below it (ticks included), its colour bar on the
    # right (bar, then its tick labels), the title above.
    grid = max(2.5, n * 1.6 * fontsize / 72)
    names = _text_width(models, fontsize) + 0.15
    pad, bar_gap, bar, bar_labels, title = 0.1, 0.12, 0.15, 0.5, 0.35
    panel_width = pad + names + grid + bar_gap + bar + bar_labels
    panel_height = pad + names + grid + title
    side_by_side = 2 * panel_width <= PAGE_WIDTH / 0.9
    width, height = (2 * panel_width, panel_height) if side_by_side else (panel_width, 2 * panel_height)
    fig = plt.figure(figsize=(width, height))

    def placed(k: int):
        left, bottom = (k * panel_width, 0.0) if side_by_side else (0.0, (1 - k) * panel_height)
        x, y = left + pad + names, bottom + pad + names
        ax = fig.add_axes((x / width, y / height, grid / width, grid / height))
        cax = fig.add_axes(((x + grid + bar_gap) / width, y / height, bar / width, grid / height))
        return ax, cax

    most = float(np.nanmax(counts)) if np.isfinite(counts).any() else 1.0
    panels = (
        # Square-root colour scale for counts: a few very frequent pairs do not wash out the rest.
        (placed(0), np.ma.masked_invalid(rates), "win rate of row vs column", "RdBu", Normalize(0.0, 1.0), "{:.2f}"),
        (placed(1), np.ma.masked_invalid(np.where(counts > 0, counts, np.nan)), "battles", "Blues", PowerNorm(0.5, 0.0, max(most, 1.0)), "{:.0f}"),
    )
    for (ax, cax), values, heading, cmap, norm, label in panels:
        image = ax.imshow(values, aspect="equal", interpolation="nearest", cmap=cmap, norm=norm)
        ax.set_title(heading, fontsize=9)
        ax.set_xticks(range(n), models, rotation=90, fontsize=fontsize)
        ax.set_yticks(range(n), models, fontsize=fontsize)
        ax.set_facecolor("#c3c9d0")  # pairs that never met: grey, apart from any colour of the scale
        fig.colorbar(image, cax=cax).ax.tick_params(labelsize=8)
        if n <= 12:
            shade = norm(values)
            for i, j in zip(*np.nonzero(~np.ma.getmaskarray(values))):
                dark = abs(shade[i, j] - 0.5) > 0.3 if cmap == "RdBu" else shade[i, j] > 0.6
                ax.text(j, i, label.format(values[i, j]), ha="center", va="center", fontsize=6, color="white" if dark else "black")
    return fig
