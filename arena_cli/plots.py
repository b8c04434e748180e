"""The report's plots, drawn with matplotlib from the same frames the tables show.

Each function returns a matplotlib ``Figure``; :mod:`arena_cli.render.figures` turns it into SVG or PNG.
matplotlib is imported inside the functions (only ``arena report`` needs it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

UP, DOWN, SAME = "#1a7f37", "#cf222e", "#8c959f"
SERIES = ("#8c959f", "#0969da", "#bf8700", "#8250df", "#1a7f37", "#cf222e")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _height(rows: int, per_row: float = 0.2, minimum: float = 3.0) -> float:
    return max(minimum, per_row * rows + 1.2)


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
        score = board["score"].to_numpy()
        lower = (board["score"] - board["score_lower"]).fill_null(0).to_numpy()
        upper = (board["score_upper"] - board["score"]).fill_null(0).to_numpy()
        ax.errorbar(score, y, xerr=[lower, upper], fmt="o", markersize=3, capsize=0, linewidth=1,
                    color=SERIES[(k + (0 if len(names) > 1 else 1)) % len(SERIES)], label=name)
    ax.set_yticks(range(len(order)), order, fontsize=7)
    ax.set_ylim(len(order) - 0.4, -0.6)
    ax.set_xlabel("score (interval)")
    ax.grid(axis="x", color="#d0d7de", linewidth=0.5)
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=len(names), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def slope_chart(positions: pl.DataFrame, variants: Sequence[str], shifted: str | None = None):
    """Where each model stands (1 = highest score) under each variant, one line per model across variants.

    ``positions`` has ``model`` and ``position_<variant>`` columns; ``shifted`` names a boolean column: those
    models are coloured (green rising, red falling), the rest grey.
    """
    plt = _pyplot()
    n = positions.height
    fig, ax = plt.subplots(figsize=(max(6.0, 2.2 * len(variants) + 3.5), _height(n, 0.2)))
    x = list(range(len(variants)))
    first, last = f"position_{variants[0]}", f"position_{variants[-1]}"
    for row in positions.sort(last).iter_rows(named=True):
        ys = [row[f"position_{v}"] for v in variants]
        emphasised = bool(row[shifted]) if shifted else False
        colour = SAME
        if emphasised and ys[-1] is not None and ys[0] is not None:
            colour = UP if ys[-1] < ys[0] else DOWN
        ax.plot(x, ys, color=colour, linewidth=1.6 if emphasised else 0.8, alpha=1.0 if emphasised else 0.6, marker="o", markersize=2.5)
        weight = "bold" if emphasised else "normal"
        if row[first] is not None:
            ax.text(-0.08, row[first], f"{row['model']} {row[first]}", ha="right", va="center", fontsize=6.5, color=colour, fontweight=weight)
        if row[last] is not None:
            ax.text(x[-1] + 0.08, row[last], f"{row[last]} {row['model']}", ha="left", va="center", fontsize=6.5, color=colour, fontweight=weight)
    ax.set_xticks(x, list(variants))
    ax.xaxis.tick_top()
    ax.set_ylim(n + 0.6, 0.4)
    ax.set_xlim(-1.6, x[-1] + 1.6)
    ax.set_yticks([])
    for side in ("left", "right", "bottom", "top"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def heatmaps(win_rate: pl.DataFrame, battles: pl.DataFrame):
    """Two model × model heatmaps side by side: win rate of the row model (ties half) and battle counts.
    Both frames have ``model`` then one column per opponent, in the same order."""
    import numpy as np
    from matplotlib.colors import Normalize, PowerNorm

    plt = _pyplot()
    models = win_rate["model"].to_list()
    n = len(models)
    rates = win_rate.drop("model").cast(pl.Float64).to_numpy()
    counts = battles.drop("model").cast(pl.Float64).to_numpy()
    side = max(4.0, 0.16 * n + 2.2)
    fig, axes = plt.subplots(1, 2, figsize=(2 * side + 1.5, side))
    most = float(np.nanmax(counts)) if np.isfinite(counts).any() else 1.0
    panels = (
        # Square-root colour scale for counts: a few very frequent pairs do not wash out the rest.
        (axes[0], np.ma.masked_invalid(rates), "win rate of row vs column", "RdBu", Normalize(0.0, 1.0), "{:.2f}"),
        (axes[1], np.ma.masked_invalid(np.where(counts > 0, counts, np.nan)), "battles", "Blues", PowerNorm(0.5, 0.0, max(most, 1.0)), "{:.0f}"),
    )
    fontsize = 7 if n <= 25 else 5
    for ax, values, title, cmap, norm, label in panels:
        image = ax.imshow(values, aspect="equal", interpolation="nearest", cmap=cmap, norm=norm)
        ax.set_title(title, fontsize=9)
        ax.set_xticks(range(n), models, rotation=90, fontsize=fontsize)
        ax.set_yticks(range(n), models, fontsize=fontsize)
        ax.set_facecolor("#c3c9d0")  # pairs that never met: grey, apart from any colour of the scale
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.02)
        if n <= 12:
            shade = norm(values)
            for i, j in zip(*np.nonzero(~np.ma.getmaskarray(values))):
                dark = abs(shade[i, j] - 0.5) > 0.3 if cmap == "RdBu" else shade[i, j] > 0.6
                ax.text(j, i, label.format(values[i, j]), ha="center", va="center", fontsize=6, color="white" if dark else "black")
    fig.tight_layout()
    return fig
