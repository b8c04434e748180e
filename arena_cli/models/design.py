"""From a battle frame to the arrays the solvers need: model indices, outcome codes, style features, weights,
and the sufficient statistics (counts per ordered pair and outcome).

Why this shape: a plain Bradley-Terry likelihood depends on the battles only through the number of each
outcome per ordered pair, so a plain fit works on at most 3·M·(M-1) cells however many votes there are.
Weighted votes (a ``weight`` column) are aggregated per pair, outcome and weight: a row holds ``count`` votes
of one weight, so a resample still draws votes, each carrying its own weight. A position term (the advantage of
the model shown first) is a feature row of ones, so its fit keeps these rows by *ordered* pair, never the
unordered cells.
With style features only the n×k feature block stays per battle; everything model-shaped is summed per pair
with ``np.bincount`` (never a dense n×M one-hot matrix).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from arena_cli.schema import Frame, vote_weight
from arena_cli.errors import InputError, NoDataError
from arena_cli.models.options import POSITION, REWEIGHT_FLOOR, BothBad, CIMethod, Compat, FitOptions, StyleTransform, Ties, as_resolved, parse_style

#: Outcome codes: how many halves of a win model_a gets. y = code / 2 in the binomial likelihood.
B_WINS, TIE, A_WINS = 0, 1, 2


@dataclass(frozen=True)
class Exclusion:
    """A model left out of the fit, and why (its battles are left out with it)."""

    model: str
    battles: int
    reason: str


@dataclass(frozen=True)
class Prepared:
    """Battles ready to fit: every model has a finite MLE, every row has its features.

    Arrays are per row: a battle, or (plain fits without clusters, for a method that does not need vote
    order) all battles of one ordered pair and outcome, ``count`` of them — which is all a plain fit needs,
    and makes its preparation independent of the number of votes. ``features`` is (k, rows), already
    transformed (and standardised unless ``--no-normalize``); ``cluster`` holds integer cluster codes (or None).
    ``vote_order``: how the rows are ordered when they are one per vote in vote order (:data:`BY_TIMESTAMP`
    or :data:`AS_READ`), None when their order means nothing. ``weight``: the weight of each of a row's votes
    (all > 0: a vote of weight 0 is left out, as if absent), None when every vote weighs 1. ``baseline``: the
    index of the model win rates are reported against (``--baseline-model``), or None.
    """

    models: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    count: np.ndarray
    features: np.ndarray
    feature_names: tuple[str, ...]
    cluster: np.ndarray | None
    excluded: tuple[Exclusion, ...]
    warnings: tuple[str, ...]
    vote_order: str | None = None
    weight: np.ndarray | None = None
    baseline: int | None = None

    @property
    def n_battles(self) -> int:
        return int(self.count.sum())

    @property
    def total_weight(self) -> float:
        """Σ vote weights: the number of battles when every vote weighs 1."""
        return float(self.count.sum()) if self.weight is None else float(self.count @ self.weight)

    @property
    def n_rows(self) -> int:
        return int(self.a.size)

    @property
    def n_models(self) -> int:
        return len(self.models)

    def with_features(self, features: np.ndarray, names: tuple[str, ...]) -> Prepared:
        return replace(self, features=features, feature_names=names)


@dataclass(frozen=True)
class Cells:
    """The (pair, outcome) cells of a battle set: what a resample of battles redistributes.

    Which side a model was shown on does not enter a plain Bradley-Terry likelihood, so a pair is unordered:
    ``pair_a`` < ``pair_b`` are its models, and a cell's ``outcome`` is coded from ``pair_a``'s side
    (A_WINS: ``pair_a`` won). ``of_battle`` maps each battle to its cell; ``size`` counts battles per cell,
    ``weight`` sums their vote weights (``size`` itself when every vote weighs 1).
    """

    of_battle: np.ndarray
    size: np.ndarray
    pair: np.ndarray
    outcome: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    weight: np.ndarray

    @property
    def n_cells(self) -> int:
        return int(self.size.size)


@dataclass(frozen=True)
class Design:
    """The rows a solver iterates over.

    A row is either one aggregated group of identical battles (plain fits: one per cell, or per
    (cluster, cell) when clustering) or one battle (style fits), or one prepared row (weighted votes, or a
    position term without style: the battles of one *ordered* pair, outcome and weight, as the side matters). The objective is Σ_rows count·weight·loglik(row);
    ``count`` is what a bootstrap resample changes. ``row_weight`` is the analysis weight of each of a row's
    battles: its vote weight (``vote_weight``, None when all are 1) times any ``--reweight`` factor. A battle
    is one observation whose score is multiplied by its weight, so the sandwich's meat takes count·weight².
    """

    n_models: int
    pair_a: np.ndarray
    pair_b: np.ndarray
    row_pair: np.ndarray
    row_outcome: np.ndarray
    row_count: np.ndarray
    row_weight: np.ndarray
    X: np.ndarray
    row_cell: np.ndarray
    row_cluster: np.ndarray | None
    aggregated: bool
    vote_weight: np.ndarray | None = None

    @property
    def n_features(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_rows(self) -> int:
        return int(self.row_pair.size)


# --------------------------------------------------------------------------------------------- preparation


def _style_exprs(schema: pl.Schema, terms: tuple[str, ...], transform: StyleTransform) -> tuple[list[pl.Expr], list[pl.Expr]]:
    """Per term: its value per battle before standardisation (null where a battle lacks a feature), and
    whether the battle's counts for it are unusable (negative, or text that is not a number).

    Counts use LMArena's transform d = (a - b) / (a + b + 1) on the per-side sums of a feature group, or
    arena-hard-auto's (``transform``): the length (tokens) as (a - b) / (a + b), any other count as a density
    per token c / (tokens + 1) on each side, then (a - b) / (a + b + 1). A numeric battle-level column (a user's
    covariate, e.g. a sentiment difference) is used as it is. Counts given as text (a JSON or CSV log keeps its
    extra columns as text; a parquet log may keep them as dictionary-encoded text) are read as numbers, as
    validation reads them; a count of a type that is no number (a time) is unusable, as text that is not one is
    (validation rejects every row that gives one, leaving the column null: the battles are then without the count,
    as in a store).
    """
    from arena_cli.features.registry import STYLE_GROUPS, side_columns
    from arena_cli.io.fields import as_number, is_given

    values, unusable = [], []
    for term in terms:
        members = STYLE_GROUPS.get(term, (term,))
        density = transform is StyleTransform.arena_hard and members != ("tokens",)
        pairs = [side_columns(m) for m in (*members, *(("tokens",) if density else ()))]
        columns = [c for pair in pairs for c in pair]
        if all(c in schema for c in columns):
            parsed, garbled = {}, []
            for column in columns:
                if schema[column].is_numeric():
                    parsed[column] = pl.col(column)
                else:
                    parsed[column] = as_number(pl.col(column), schema[column])
                    garbled.append(is_given(pl.col(column), schema[column]) & parsed[column].is_null())
            sides = [
                pl.sum_horizontal([parsed[p[side]] for p in pairs[: len(members)]], ignore_nulls=False).cast(pl.Float64) for side in (0, 1)
            ]
            negative = [(side < 0) for side in sides]
            if density:
                tokens = [parsed[pairs[-1][side]].cast(pl.Float64) for side in (0, 1)]
                negative += [(t < 0) for t in tokens]
                sides = [side / (t + 1.0) for side, t in zip(sides, tokens)]
            side_a, side_b = sides
            offset = 0.0 if transform is StyleTransform.arena_hard and not density else 1.0
            values.append((side_a - side_b) / (side_a + side_b + offset))
            unusable.append(pl.any_horizontal(*negative, *garbled))
        elif term in schema and term not in STYLE_GROUPS:
            if not schema[term].is_numeric():
                raise InputError(f"style covariate {term!r} is {schema[term]}, not numeric")
            values.append(pl.col(term).cast(pl.Float64))
            unusable.append(pl.lit(False))
        else:
            raise InputError(
                f"style feature {term!r}: the battles have no {', '.join(columns)} columns"
                + ("" if term in STYLE_GROUPS else f" and no numeric column {term!r}")
                + " (feature groups: length, header, list, bold; or any <name>_a/<name>_b count pair or numeric column)"
            )
    return values, unusable


#: Outcome codes beyond the three outcomes: DROP marks votes left out by --ties drop / --both-bad drop,
#: UNKNOWN a label that is not an outcome, MISSING no outcome at all.
DROP, UNKNOWN, MISSING = -2, -1, -3


def _outcome_expr(options: FitOptions) -> pl.Expr:
    from arena_cli.exprs import lookup

    tie = DROP if options.ties is Ties.drop else TIE
    both_bad = DROP if options.both_bad is BothBad.drop else tie
    mapping = {"model_a": A_WINS, "model_b": B_WINS, "tie": tie, "both_bad": both_bad, None: MISSING}
    return lookup(pl.col("outcome").cast(pl.String), mapping, UNKNOWN, pl.Int8())


@dataclass
class Encoded:
    """Battle parts already reduced by an :class:`Encoder` (as they were read: see ``reduce`` in
    :func:`arena_cli.models.inputs.load_fit_battles`) for a fit with the same options. The fit takes them
    (:meth:`take`), so that they are let go as it turns them into arrays (5 GB for a style fit of 100M votes)."""

    parts: list[Frame]

    def take(self) -> list[Frame]:
        parts, self.parts = self.parts, []
        return parts


#: Battles: one frame, or the parts of one table (same columns), which are read and reduced one at a time.
Battles = Frame | Sequence[Frame] | Encoded


#: The battle column that orders votes for a method that needs their order.
TIMESTAMP = "timestamp"
#: The battle column of vote weights (absent or null: 1).
WEIGHT = "weight"
#: ``Prepared.vote_order``: by timestamp (votes with equal timestamps, and any without one at the end, as read) ...
BY_TIMESTAMP = "timestamp"
#: ... or in the order they were read (files in the order given, rows in file order; a store's parts in order).
AS_READ = "read order"


class Encoder:
    """The per-battle values a fit with ``options`` uses, computed from a frame of battles in one polars pass:
    model and outcome codes, the style terms (before standardisation), the cluster values, and the timestamp
    when the rating method needs vote order (and the battles have one).

    Row-wise, so it can run on each part of a table, or on each batch as a file is read (or within a
    streaming query), and only its result is ever held whole, never the per-side counts the terms come from.
    Row order is kept: the parts and batches, concatenated in the order read, are the votes in read order.

    ``columns``: the battle columns it reads (besides the per-side counts of the style's feature groups, which
    the loader computes or reads): a loader asks for these. ``TIMESTAMP`` is among them when the method needs
    vote order; battles without it are taken in the order read.

    When nothing is per battle (no style terms, no clusters, no vote order), the votes of a frame are counted
    by ordered pair, outcome and weight instead (``_count``): a plain fit of 100M votes then holds a few hundred
    thousand rows, not 100M.
    """

    def __init__(self, options: FitOptions):
        from arena_cli.models.methods import rating_method

        self.options = as_resolved(options)
        self.terms = parse_style(self.options.style)
        self.ordered = rating_method(self.options.method).needs_order

    @property
    def columns(self) -> tuple[str, ...]:
        from arena_cli.features.registry import BY_NAME, STYLE_GROUPS

        covariates = [t for t in self.terms if t not in STYLE_GROUPS and t not in BY_NAME]
        cluster = [self.options.cluster] if self.options.cluster else []
        return tuple(dict.fromkeys(["model_a", "model_b", "outcome", WEIGHT, *cluster, *covariates, *([TIMESTAMP] if self.ordered else [])]))

    def __call__(self, frame: Frame) -> Frame:
        options = self.options
        schema = frame.collect_schema()
        for column in ("model_a", "model_b", "outcome"):
            if column not in schema:
                raise InputError(f"battles have no {column!r} column (columns: {', '.join(schema)})")
        if options.cluster and options.cluster not in schema:
            raise InputError(f"--cluster {options.cluster!r}: the battles have no such column (a column of the log or the store, "
                             "e.g. judge or question_id)")  # (not the columns read: only those the fit needs were)
        style, unusable = _style_exprs(schema, self.terms, options.style_transform)
        encoded = frame.select(
            # global categories: a model has the same code in both columns and every part, so each name is hashed once
            pl.col("model_a").cast(pl.String).cast(pl.Categorical).alias("_a"),
            pl.col("model_b").cast(pl.String).cast(pl.Categorical).alias("_b"),
            _outcome_expr(options).alias("_outcome"),
            *([vote_weight(schema).alias("_weight")] if WEIGHT in schema else []),  # (none: every vote weighs 1, 8 bytes a vote saved)
            *([pl.col(options.cluster).alias("_cluster")] if options.cluster else []),
            *([pl.col(TIMESTAMP).alias("_timestamp")] if self.ordered and TIMESTAMP in schema else []),
            *(value.alias(f"_style{i}") for i, value in enumerate(style)),
            *(check.alias(f"_unusable{i}") for i, check in enumerate(unusable)),
        )
        if not self.counts_votes:
            return encoded
        return encoded.group_by([c for c in ENCODED_CELL if c in encoded.collect_schema()]).agg(pl.len().alias(COUNT))

    @property
    def counts_votes(self) -> bool:
        """Whether the encoded votes are counted per cell (see the class): none of their values is per battle."""
        return not self.terms and not self.options.cluster and not self.ordered

    def counted(self, encoded: pl.DataFrame) -> bool:
        """Whether every encoded battle has the per-side counts of the style's feature groups and features: a
        term's value is null where a count is missing (or is text that is not a number: unusable, not missing)."""
        from arena_cli.features.registry import BY_NAME, STYLE_GROUPS

        missing = [
            pl.col(f"_style{i}").is_null() & ~pl.col(f"_unusable{i}").fill_null(False)
            for i, term in enumerate(self.terms) if term in STYLE_GROUPS or term in BY_NAME
        ]
        return not missing or not encoded.select(pl.any_horizontal(missing).any()).item()


#: The encoded columns that make a cell of a plain fit, and the column of votes per cell.
ENCODED_CELL = ("_a", "_b", "_outcome", "_weight")
COUNT = "_count"


@dataclass(frozen=True)
class _Encoded:
    """The checked values of :func:`_encode`, one row per vote, or aggregated (``count`` votes per row)."""

    models: list[str]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    count: np.ndarray
    features: np.ndarray
    cluster: np.ndarray | None
    vote_order: str | None
    weight: np.ndarray | None


def _encode(battles: Battles, encode: Encoder) -> _Encoded:
    """The battles' :class:`Encoder` values, part by part (unless encoded already), checked and as numpy arrays;
    in vote order when the encoder keeps it, else aggregated by ordered pair and outcome when nothing else
    (style terms, clusters) is per battle."""
    options, terms = encode.options, encode.terms
    raw: list[Frame] | None
    if isinstance(battles, Encoded):
        raw, encoded_parts = None, battles.take()
    else:
        raw = [battles] if isinstance(battles, (pl.DataFrame, pl.LazyFrame)) else list(battles)
        encoded_parts = [encode(part.lazy()) for part in raw]
    if not encoded_parts:
        raise NoDataError("no battles to fit")
    # polars' streaming engine reads a stored part and encodes it in one pass (12-14% faster than the in-memory
    # engine for style fits of 1M and 5M votes, and a smaller peak): the per-side counts are never held whole
    encoded = pl.concat([part if isinstance(part, pl.DataFrame) else part.collect(engine="streaming") for part in encoded_parts],
                        how="diagonal_relaxed", rechunk=False)  # (a part of battles without weights has none)
    del encoded_parts  # (a part read already is not copied, and now held by ``encoded`` alone)
    if encoded.height == 0:
        raise NoDataError("no battles left after filtering")
    vote_order = None
    if encode.ordered:
        vote_order = AS_READ
        if "_timestamp" in encoded.columns and encoded["_timestamp"].null_count() < encoded.height:
            encoded = encoded.sort("_timestamp", nulls_last=True, maintain_order=True)
            vote_order = BY_TIMESTAMP
    outcome = encoded["_outcome"].to_numpy()
    if encoded["_a"].null_count() or encoded["_b"].null_count() or (outcome == MISSING).any():
        raise InputError("some battles have no model_a, model_b or outcome")
    flags = encoded.select(pl.col(f"_unusable{i}").any() for i in range(len(terms))).row(0) if terms else ()
    for term, is_unusable in zip(terms, flags):
        if is_unusable:
            raise InputError(
                f"style feature {term!r}: per-side values that are negative or not numbers; the (a - b)/(a + b + 1) "
                f"transform needs counts. Give a signed covariate as one battle-level column instead (e.g. {term}_diff)."
            )
    votes = encoded[COUNT].cast(pl.Float64).to_numpy() if encode.counts_votes else None
    if (outcome == UNKNOWN).any():  # (battles read by arena-cli are validated: only a library caller's can have these)
        unknown = [part.lazy().filter(_outcome_expr(options) == UNKNOWN).select(pl.col("outcome").cast(pl.String)) for part in raw or ()]
        labels = sorted(pl.concat(unknown).unique().collect().to_series().to_list())[:5] if unknown else []
        unknown_votes = int((outcome == UNKNOWN).sum()) if votes is None else int(votes[outcome == UNKNOWN].sum())
        raise InputError(f"{unknown_votes} battle(s) have an unknown outcome {labels}; expected model_a, model_b, tie, both_bad")
    names, (a, b) = _model_codes(encoded["_a"], encoded["_b"])
    weight = _vote_weights(encoded)
    if votes is not None:  # (cells of each part: the same cell can come from several parts)
        a, b, outcome, count, weight = _aggregate(a, b, outcome, len(names), votes, weight=weight)
        return _Encoded(names, a, b, outcome, count, np.zeros((0, a.size)), None, None, weight)
    cluster = _alone_clusters(encoded["_cluster"].rank("dense").fill_null(0).cast(pl.Int64).to_numpy()) if options.cluster else None
    # the (k, battles) array the solvers use, a term at a time, each column let go once copied: the frame and
    # the array are never both whole (at 100M battles, 3.2 GB each for four terms). Columns are taken out in
    # place (a ``select`` or ``drop`` of a frame of many parts copies what it keeps), from a shallow copy of the
    # frame (a caller's frame keeps its columns).
    X = np.empty((len(terms), encoded.height))
    encoded = encoded.clone()
    for name in [c for c in encoded.columns if not c.startswith("_style")]:
        encoded.drop_in_place(name)
    for i in range(len(terms)):
        into_array(encoded.drop_in_place(f"_style{i}"), X[i])
    return _Encoded(names, a, b, outcome, ones(a.size), X, cluster, vote_order, weight)


def _vote_weights(encoded: pl.DataFrame) -> np.ndarray | None:
    """Each vote's weight, or None when every vote weighs 1 (the unweighted fit, exactly as without weights).
    Battles read by arena-cli have valid weights; a library caller's frame is checked here."""
    if "_weight" not in encoded.columns or encoded.select((pl.col("_weight").fill_null(1.0) == 1.0).all()).item():
        return None
    weight = encoded["_weight"].fill_null(1.0).to_numpy()
    if not (np.isfinite(weight) & (weight >= 0)).all():
        raise InputError("battle weights must be finite numbers >= 0")
    return weight


def _model_codes(*columns: pl.Series) -> tuple[list[str], list[np.ndarray]]:
    """Sorted model names, and each categorical column as indices into them (a lookup on the category codes,
    never a second pass over the names)."""
    names = sorted({name for column in columns for name in column.unique().to_list()})
    codes = pl.Series(names, dtype=pl.String).cast(pl.Categorical).to_physical().to_numpy()
    lookup = np.zeros(int(codes.max(initial=0)) + 1, dtype=_index_type(len(names)))  # (32-bit: 0.8 GB less at 100M battles)
    lookup[codes] = np.arange(len(names))
    return names, [into_array(column.to_physical(), np.empty(column.len(), dtype=lookup.dtype), lookup) for column in columns]


def into_array(series: pl.Series, out: np.ndarray, lookup: np.ndarray | None = None) -> np.ndarray:
    """``out`` filled with a series' values (``lookup[value]`` with a ``lookup``), a chunk at a time: the
    ``to_numpy`` of a series of many parts (one per slice or store part read) first copies them into one fresh
    array, whose every page faults in, and then that is copied again (0.6 s of a style fit of 10M votes)."""
    start = 0
    for chunk in series.get_chunks():
        values = chunk.to_numpy()
        stop = start + values.size
        if lookup is None:
            out[start:stop] = values
        else:
            np.take(lookup, values, out=out[start:stop])
        start = stop
    return out


def ones(n: int) -> np.ndarray:
    """n ones as a read-only view of one value: a per-battle factor that is 1 everywhere (a battle count, a
    weight) costs no memory (800 MB at 100M battles), and arithmetic with it is the same."""
    return np.broadcast_to(np.float64(1.0), (n,))


def is_ones(x: np.ndarray) -> bool:
    """Whether ``x`` is :func:`ones`."""
    return x.ndim == 1 and x.strides == (0,) and bool(x.size) and x[0] == 1.0


def product(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x * y, without a new array when one factor is :func:`ones`."""
    if is_ones(x):
        return y
    if is_ones(y):
        return x
    return x * y


def tally(index: np.ndarray, weights: np.ndarray | None, minlength: int) -> np.ndarray:
    """``np.bincount(index, weights, minlength)`` as floats; without weights when there are none or they are
    :func:`ones` (the same sums, exact: np.bincount would first copy the view into an array of ones, 0.8 GB at
    100M battles)."""
    if weights is None or is_ones(weights):
        return np.bincount(index, minlength=minlength).astype(np.float64)
    return np.bincount(index, weights, minlength=minlength)


#: Key spaces up to this size are tabulated with ``np.bincount`` (one pass); larger ones are sorted.
DENSE_KEYS = 1 << 26


def _aggregate(
    a: np.ndarray, b: np.ndarray, outcome: np.ndarray, n_models: int, count: np.ndarray | None = None, *, weight: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Rows of the same ordered pair, outcome (and ``weight``) as one row with their total ``count`` (default:
    one per row), sorted by pair and outcome (then weight); the weight of each row's votes, or None."""
    codes = 1 + A_WINS - DROP
    keys = pair_keys(a, b, n_models)
    keys *= codes
    keys += outcome
    keys -= DROP
    size = n_models * n_models * codes
    if weight is not None:
        values, weight_code = np.unique(weight, return_inverse=True)
        keys = keys * values.size + weight_code
        size *= values.size
    if size <= DENSE_KEYS:
        totals = tally(keys, count, size)
        unique = np.flatnonzero(totals)
        total = totals[unique]
    else:
        unique, inverse = np.unique(keys, return_inverse=True)
        total = tally(inverse, count, unique.size)
    row_weight = None
    if weight is not None:
        unique, code = np.divmod(unique, values.size)
        row_weight = values[code]
    pair = unique // codes
    return pair // n_models, pair % n_models, (unique % codes + DROP).astype(np.int8), total.astype(np.float64), row_weight


def prepare(battles: Battles, options: FitOptions) -> Prepared:
    """Validate, encode and filter battles; exclude models below ``min_battles`` and, when the rating method
    needs it, models without a finite MLE (with the reason). Rows stay in vote order when the method needs it."""
    from arena_cli.models.methods import rating_method

    encoder = Encoder(options)
    options, terms = encoder.options, encoder.terms
    encoded = _encode(battles, encoder)
    names, a, b, outcome, count, X, cluster = encoded.models, encoded.a, encoded.b, encoded.outcome, encoded.count, encoded.features, encoded.cluster
    weight = encoded.weight
    warnings: list[str] = []

    counted = outcome != DROP if weight is None else (outcome != DROP) & (weight > 0)  # a vote of weight 0 counts for nothing
    if weight is not None:
        _check_weight_range(weight[counted], count[counted])
    self_battle = a == b
    if self_battle.any():
        warnings.append(f"{int(count[self_battle].sum())} self-battle(s) (model_a == model_b) left out")
    missing = counted & ~self_battle & ~np.isfinite(X).all(axis=0)
    if missing.any():
        warnings.append(f"{int(count[missing].sum())} battle(s) without style features ({', '.join(terms)}) left out")
    keep = counted & ~self_battle & ~missing
    if not keep.any():
        hint = (f": none of the {int(count[counted & ~self_battle].sum()):,} battle(s) has what the style features {', '.join(terms)} are "
                "computed from (conversations, or counts such as conv_metadata's); fit without them: --style none (diff, report: "
                "--variants none)") if missing.any() else ""
        raise NoDataError(f"no battles left to fit (after dropping ties / both_bad / self-battles / missing features){hint}")

    # which models to keep is decided on the counts per pair and outcome of the battles kept so far
    pair_a, pair_b, pair_outcome, pair_count, _ = _aggregate(a, b, np.where(keep, outcome, UNKNOWN), len(names), count)
    counted_rows = pair_outcome != UNKNOWN
    kept, excluded = _exclude_models(
        names, pair_a[counted_rows], pair_b[counted_rows], pair_outcome[counted_rows], pair_count[counted_rows],
        options.min_battles, finite_mle=rating_method(options.method).needs_strong_connection,
    )
    for e in excluded:
        warnings.append(f"{e.model} ({e.battles} battle(s)) excluded: {e.reason}")
    keep_rows = keep & kept[a] & kept[b] if excluded else keep
    if not keep_rows.all():
        a, b, outcome, X = a[keep_rows], b[keep_rows], outcome[keep_rows], X[:, keep_rows]
        count = ones(a.size) if is_ones(count) else count[keep_rows]  # (a copy of the view would be ones in memory)
        weight = weight[keep_rows] if weight is not None else None
    if weight is not None and (weight == 1.0).all():  # only votes of weight 0 (now left out) had another
        weight = None
    if not kept.all():
        remap = np.cumsum(kept) - 1
        a, b = remap[a], remap[b]
        names = [m for m, k in zip(names, kept) if k]
    if len(names) < 2:
        raise NoDataError("fewer than two models left to rank" + (f" (excluded: {_exclusions(excluded)})" if excluded else ""))
    if options.ties is Ties.davidson and not np.any(outcome == TIE):
        raise InputError("--ties davidson: these battles have no ties, so the tie parameter cannot be estimated")
    if options.ties is Ties.davidson and np.all(outcome == TIE):
        raise InputError("--ties davidson: every battle is a tie, so the tie parameter has no finite estimate")

    baseline = _baseline(options, names, a, b, count)
    arena_hard = options.style_transform is StyleTransform.arena_hard
    X, feature_names = _finish_features(
        X, list(terms), options.normalize, warnings, None if weight is None else count * weight,
        ddof=1 if arena_hard else 0, sign=np.where(a == baseline, -1.0, 1.0) if arena_hard and baseline is not None else None,
    )
    if cluster is not None:
        cluster = np.unique(cluster[keep_rows], return_inverse=True)[1]
        _check_clusters(options, int(cluster.max(initial=-1)) + 1, warnings)
    return Prepared(
        models=tuple(names), a=a, b=b, outcome=outcome.astype(np.int8), count=count, features=X, feature_names=tuple(feature_names),
        cluster=cluster, excluded=tuple(excluded), warnings=tuple(warnings), vote_order=encoded.vote_order, weight=weight,
        baseline=baseline,
    )


#: The largest ratio of two votes' weights a fit takes: beyond it, sums in double precision (16 digits) lose the
#: lighter votes altogether (a vote of weight 1e20 beside votes of weight 1 left every score at the offset).
WEIGHT_RANGE = 1e12


def _check_weight_range(weight: np.ndarray, count: np.ndarray) -> None:
    """An :class:`InputError` when the (positive) vote weights span more than :data:`WEIGHT_RANGE`, or sum beyond
    what a double holds."""
    if not weight.size:
        return
    low, high = float(weight.min()), float(weight.max())
    with np.errstate(over="ignore"):
        total = float(weight @ count)
    if not np.isfinite(total):
        raise InputError(f"vote weights up to {high:g} sum beyond what a double holds; rescale the weights")
    if high > WEIGHT_RANGE * low:
        raise InputError(f"vote weights from {low:g} to {high:g}: a fit in double precision resolves weights within a ratio of "
                         f"{WEIGHT_RANGE:g} of each other; rescale or cap the weights")


def _exclusions(excluded: Sequence[Exclusion], shown: int = 5) -> str:
    """The models left out and why (the first ``shown``), and what would keep them when a threshold did."""
    text = "; ".join(f"{e.model}: {e.reason}" for e in excluded[:shown]) + (f"; and {len(excluded) - shown} more" if len(excluded) > shown else "")
    few = any("--min-battles" in e.reason for e in excluded)
    return text + ("; lower --min-battles to keep models with fewer battles" if few else "")


def _baseline(options: FitOptions, models: list[str], a: np.ndarray, b: np.ndarray, count: np.ndarray) -> int | None:
    """The index of the model win rates are reported against: ``baseline_model``, or under ``--compat arena-hard``
    the one model in every battle (arena-hard-auto's baseline); None when there is none to report."""
    if options.baseline_model is not None:
        if options.baseline_model not in models:
            shown = ", ".join(models[:10]) + (", …" if len(models) > 10 else "")
            raise InputError(f"--baseline-model {options.baseline_model!r}: no such model in the fit (models: {shown})")
        return models.index(options.baseline_model)
    if options.compat is not Compat.arena_hard:
        return None
    appearances = tally(a, count, len(models)) + tally(b, count, len(models))
    everywhere = np.flatnonzero(appearances == count.sum())
    if everywhere.size != 1:
        found = "no model is" if everywhere.size == 0 else f"{everywhere.size} models are"
        raise InputError(f"--compat arena-hard: {found} in every battle, so there is no baseline to find; name it with --baseline-model")
    return int(everywhere[0])


#: Fewer clusters than this give intervals that are warned about: a resample of a few clusters, or a covariance
#: summed over them, varies too much to trust.
FEW_CLUSTERS = 10


def _check_clusters(options: FitOptions, clusters: int, warnings: list[str]) -> None:
    """Intervals by clusters need two at least (from one, every resample is the data itself, and every interval
    has no width); fewer than :data:`FEW_CLUSTERS` are warned about."""
    if options.ci is CIMethod.none:
        return
    if clusters < 2:
        raise InputError(f"--cluster {options.cluster}: the battles fitted fall in {clusters} cluster, and intervals by clusters need two or more "
                         "(every resample would be the data itself); drop --cluster, or cluster by another column")
    if clusters < FEW_CLUSTERS:
        warnings.append(f"--cluster {options.cluster}: intervals from only {clusters} clusters are rough (they vary with the few clusters drawn)")


def _alone_clusters(codes: np.ndarray) -> np.ndarray:
    """Dense cluster codes (1..G, 0 where the cluster value is missing): a battle without one is its own cluster."""
    codes = codes.copy()
    alone = codes == 0
    codes[alone] = codes.max(initial=0) + 1 + np.arange(int(alone.sum()))
    return codes


def _finish_features(
    X: np.ndarray, names: list[str], normalize: bool, warnings: list[str], weight: np.ndarray | None = None, *,
    ddof: int = 0, sign: np.ndarray | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Standardise (mean 0 and sd 1: the population sd as FastChat/arena-rank, ``ddof=1`` as arena-hard-auto;
    weighted by ``weight`` per row, so that a vote of weight 3 counts as three identical votes) and drop features
    with no information. ``sign`` (±1 per row) orients each row before the mean and sd are taken (arena-hard-auto
    takes every difference as model minus baseline): the oriented values are standardised, and the rows keep
    their own sign. Works in place: ``X`` is the prepare step's own array."""
    if not names:
        return X, names
    if normalize:
        oriented = X if sign is None else X * sign
        if weight is None:
            total: float = X.shape[1]
            mean = oriented.mean(axis=1)
        else:
            total = float(weight.sum())
            mean = oriented @ weight / total
        X -= mean[:, None] if sign is None else np.outer(mean, sign)
        squares = np.einsum("kn,kn->k", X, X) if weight is None else (X * X) @ weight
        sd = np.sqrt(squares / (total - ddof)) if total > ddof else np.zeros_like(mean)
        informative = sd > 1e-12 * np.maximum(1.0, np.abs(mean))
        X /= np.where(informative, sd, 1.0)[:, None]
    else:
        informative = np.any(X != 0, axis=1)
    for name, ok in zip(names, informative):
        if not ok:
            warnings.append(f"style feature {name!r} is constant in these battles (no information): left out")
    if not informative.all():
        X = np.ascontiguousarray(X[informative])
    return X, [n for n, ok in zip(names, informative) if ok]


#: Rows of the style terms taken at a time for their cross-products (a temporary of this many values per term).
_GRAM_ROWS = 1 << 20


@dataclass(frozen=True)
class DesignGram:
    """Σ w·z·zᵀ over the battles, z = (e_a − e_b, x, 1): the cross-products of the full design (the ratings'
    columns, the style terms, and the position term's column of ones, last), i.e. 4 × the information at p = ½.
    What decides whether a fit's parameters are identified, in blocks: ``terms`` (k+1)², ``cross`` M × (k+1)
    (Σ w·x for a model as model_a minus as model_b), ``models`` M × M (the Laplacian of the pairs' weights).
    ``span``: each term's range over the battles (max − min; 0 for the ones). Sums (and extremes) over battles,
    so a part of the battles has its own, and the parts' combine into the whole's."""

    names: tuple[str, ...]
    terms: np.ndarray
    cross: np.ndarray
    models: np.ndarray
    span: np.ndarray


def _battle_weight(prepared: Prepared) -> np.ndarray | None:
    """Each row's weight in the design's sums (battles × vote weight), None when every row weighs 1."""
    weight = prepared.count if prepared.weight is None else product(prepared.count, prepared.weight)
    return None if is_ones(weight) else weight


def _term_sums(X: np.ndarray, a: np.ndarray, b: np.ndarray, weight: np.ndarray | None, n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """``terms`` and ``cross`` of :class:`DesignGram` for some battles (``X``: their style terms; the row of ones is
    added in the sums, never as an array)."""
    k, n = X.shape
    weighted = X if weight is None else X * weight
    a, b = a.astype(np.intp), b.astype(np.intp)  # (once: np.bincount would copy 32-bit codes on every call)
    terms = np.empty((k + 1, k + 1))
    terms[:k, :k] = weighted @ X.T
    terms[:k, k] = terms[k, :k] = weighted.sum(axis=1)
    terms[k, k] = n if weight is None else weight.sum()
    cross = np.empty((n_models, k + 1))
    for j, row in enumerate([*weighted, weight]):
        cross[:, j] = np.bincount(a, row, minlength=n_models) - np.bincount(b, row, minlength=n_models)
    return terms, cross


def design_gram(prepared: Prepared, cell_index: Cells) -> DesignGram:
    """The :class:`DesignGram` of the prepared battles, a slice of battles at a time (the pairs' weights from the cells)."""
    M, (k, n) = prepared.n_models, prepared.features.shape
    weight = _battle_weight(prepared)
    terms, cross = np.zeros((k + 1, k + 1)), np.zeros((M, k + 1))
    low, high = np.full(k + 1, np.inf), np.full(k + 1, -np.inf)
    for start in range(0, n, _GRAM_ROWS):
        rows = slice(start, start + _GRAM_ROWS)
        X = prepared.features[:, rows]
        part_terms, part_cross = _term_sums(X, prepared.a[rows], prepared.b[rows], None if weight is None else weight[rows], M)
        terms += part_terms
        cross += part_cross
        low[:k], high[:k] = np.minimum(low[:k], X.min(axis=1)), np.maximum(high[:k], X.max(axis=1))
    low[k] = high[k] = 1.0
    pair_weight = np.bincount(cell_index.pair, cell_index.weight)
    models = np.zeros((M, M))
    models[cell_index.pair_a, cell_index.pair_b] = -pair_weight  # (each unordered pair once)
    models += models.T
    models[np.diag_indices(M)] -= models.sum(axis=1)
    return DesignGram((*prepared.feature_names, POSITION), terms, cross, models, high - low)


def refuse_collinear(gram: np.ndarray, prepared: Prepared, names: Sequence[str]) -> None:
    """An :class:`InputError` when some of the style terms ``names`` that one fit takes are a combination of the
    others in these battles (the same count under two names, header counts equal to list counts, ...): their
    coefficients cannot be told apart, so any split of their joint effect fits as well (and a sandwich covariance
    does not exist). ``gram``: the terms' cross-products (``DesignGram.terms``; rows as ``prepared.feature_names``)."""
    if len(names) < 2:
        return
    rows = [prepared.feature_names.index(name) for name in names]
    chosen = gram[np.ix_(rows, rows)]
    scale = np.sqrt(np.diag(chosen))
    values, vectors = np.linalg.eigh(chosen / np.outer(scale, scale))
    if values[0] > COLLINEAR:
        return
    involved = [name for name, loading in zip(names, vectors[:, 0]) if abs(loading) > 1e-3]
    raise InputError(f"style terms {', '.join(involved)} are collinear in these battles (one is a combination of the others), so their "
                     "effects cannot be told apart; fit without one of them")


#: The smallest eigenvalue, relative to the terms' own sums of squares, below which terms are taken as exactly
#: dependent (on other terms, or on the models): a dependence that only holds nearly gives wide intervals instead.
COLLINEAR = 1e-9
#: Above this, the Schur complement's smallest eigenvalue is trusted as computed; below, it is computed again from
#: the residuals (it is a difference of sums, and loses digits as the models' graph is badly connected).
_SUSPECT = 1e-6


def refuse_confounded(gram: DesignGram, prepared: Prepared, names: Sequence[str], position: bool) -> None:
    """An :class:`InputError` when some combination of the style terms ``names`` (and the position term) is, in
    every battle, a function of the two models up to a constant: f(model_a) − f(model_b) + c for some per-model f
    (each model's answers always of one length, say; standardising a term shifts it by a constant). Its effect is
    then that of a difference in strength (and of the side shown first), and any split between them fits as well:
    the scores are arbitrary, and the information matrix has no inverse.

    The test is the rank of the full design: the Schur complement S = G_ss − G_sr·G_rr⁺·G_rs of the ratings (and
    the constant) in the design's cross-products, relative to the terms' own (diag G_ss), must have no eigenvalue
    below :data:`COLLINEAR`, as for terms collinear among themselves (:func:`refuse_collinear`, which runs first)."""
    rows = [gram.names.index(name) for name in names] + [len(gram.names) - 1]  # (the constant: the position term's row)
    G_ss, G_rs = gram.terms[np.ix_(rows, rows)], gram.cross[:, rows]
    M = gram.models.shape[0]
    shift = max(float(np.trace(gram.models)) / M, 1e-300) / M  # (ones·onesᵀ: the models are connected, only the gauge is free)
    v = np.linalg.solve(gram.models + shift, G_rs)  # G_rr⁺·G_rs: the columns of G_rs sum to 0 over the models
    scale = np.sqrt(np.diag(G_ss))
    S, exact = G_ss - G_rs.T @ v, None
    # the terms alone first (up to a constant): a term confounded so is named alone, as fitting without the
    # position term would not help; then, with the position term, a combination that needs it
    for with_position in (False, True) if position else (False,):
        values, vectors = _eigen(S, scale, with_position)
        if values[0] > _SUSPECT:
            continue
        exact = _residual_gram(prepared, rows, v) if exact is None else exact
        values, vectors = _eigen(exact, scale, with_position)
        if values[0] <= COLLINEAR:
            break
    else:
        return
    loaded = [abs(loading) > 1e-3 for loading in vectors[:, 0]]
    terms = [name for name, on in zip(names, loaded) if on]
    said = [f"style term{'s' if len(terms) > 1 else ''} {', '.join(terms)}"] if terms else []
    first = with_position and loaded[-1]
    several = len(terms) + first > 1
    subject = " and ".join([*said, *(["the position term"] if first else [])])
    raise InputError(
        f"{subject} {'are' if several else 'is'} confounded with the models in these battles: {'a combination of them' if several else 'it'} "
        "equals, in every battle, a per-model value of model_a minus that of model_b, up to a constant (each model's answers always of one "
        f"length, say), so {'their effects' if several else 'its effect'} cannot be told apart from the scores (or a first-position advantage); "
        f"fit without {'one of them' if several else 'it'}"
    )


def _eigen(S: np.ndarray, scale: np.ndarray, position: bool) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (ascending) and vectors of the Schur complement S of the ratings in the chosen terms and the
    constant (last), relative to their own sums of squares (``scale``²): as it is for a fit with the position term
    (the constant is one of its terms), or else given the constant too (a term confounded with the models up to a
    constant). A constant that is itself in the models' span (one model always shown first) adds nothing."""
    relative = S / np.outer(scale, scale)
    if not position:
        constant = relative[-1, -1]
        relative = relative[:-1, :-1] - (np.outer(relative[:-1, -1], relative[-1, :-1]) / constant if constant > COLLINEAR else 0.0)
    return np.linalg.eigh(relative)


def _residual_gram(prepared: Prepared, rows: list[int], v: np.ndarray) -> np.ndarray:
    """Σ w·r·rᵀ for the residuals r = x − (v_a − v_b) of the chosen terms (``rows`` of the terms with the row of
    ones) on the ratings' columns: the Schur complement as a sum of squares, to its last digits."""
    k = prepared.features.shape[0]
    weight = _battle_weight(prepared)
    features = [row for row in rows if row < k]
    S = np.zeros((len(rows), len(rows)))
    for start in range(0, prepared.n_rows, _GRAM_ROWS):
        part = slice(start, start + _GRAM_ROWS)
        n = prepared.a[part].size
        X = np.vstack([prepared.features[features, part], np.ones((len(rows) - len(features), n))])
        residual = X - (v[prepared.a[part]] - v[prepared.b[part]]).T
        S += (residual if weight is None else residual * weight[part]) @ residual.T
    return S


def pair_weights(cell_index: Cells) -> np.ndarray:
    """Per row: inverse pair-frequency weights 1 / max(n_pair, 50) (unordered pairs; n_pair the total vote weight
    of the pair, its battles when every vote weighs 1), normalised to mean 1 over the (weighted) battles. They
    multiply the vote weights."""
    n_pair = np.bincount(cell_index.pair, cell_index.weight)
    per_pair = 1.0 / np.maximum(n_pair, REWEIGHT_FLOOR)
    per_pair /= float(per_pair @ n_pair) / float(n_pair.sum())
    return per_pair[cell_index.pair[cell_index.of_battle]]


def check_position_identified(prepared: Prepared) -> None:
    """An :class:`InputError` when the position term is confounded with the models' strengths: when strengths v
    exist with v_a − v_b = 1 for every ordered pair (a shown first, b second) that met — one model always
    shown first against the others, say — a first-position advantage cannot be told from a stronger model.
    Swapped games (each pair in both orders) identify it; so do cycles of pairs shown in mixed orders.
    Tested exactly by least squares on the ordered pairs (the models are connected: the residual is 0 only
    for such v)."""
    M = prepared.n_models
    keys = _codes(pair_keys(prepared.a, prepared.b, M), M * M)[0]
    first, second = keys // M, keys % M
    laplacian = np.zeros((M, M))
    np.add.at(laplacian, (first, second), -1.0)
    np.add.at(laplacian, (second, first), -1.0)
    laplacian[np.diag_indices(M)] -= laplacian.sum(axis=1)
    shown_first = np.bincount(first, minlength=M) - np.bincount(second, minlength=M)
    v = np.linalg.solve(laplacian + 1.0 / M, shown_first.astype(np.float64))
    if np.abs(v[first] - v[second] - 1.0).max() < 1e-6:
        raise InputError(
            "--position-bias: the order in which models are shown is confounded with the models (e.g. one model is "
            "always shown first): no battles show the same pairs in both orders, so the first-position advantage "
            "cannot be estimated"
        )


# ---------------------------------------------------------------------------------- existence of the MLE


def credit_edges(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, n_models: int) -> np.ndarray:
    """Directed edges i -> j (as keys i·M + j) where i earned win credit against j: a win, or a tie (both ways)."""
    a_credit, b_credit = outcome >= TIE, outcome <= TIE
    keys = np.concatenate([a[a_credit] * n_models + b[a_credit], b[b_credit] * n_models + a[b_credit]])
    return _codes(keys, n_models * n_models)[0]


#: Up to this many models the common case (a strongly connected graph) is checked with dense numpy arrays,
#: without importing scipy.sparse (a fifth of a second of start-up for every `arena fit`).
DENSE_GRAPH_LIMIT = 4096


def strongly_connected(edges: np.ndarray, n_models: int, involved: np.ndarray) -> bool:
    """Whether every involved model reaches every other one along credit edges (Zermelo's condition)."""
    if not involved.any():
        return True
    if n_models > DENSE_GRAPH_LIMIT:
        main, _, _ = mle_components(edges, n_models, involved)
        return bool(main[involved].all())
    adjacency = np.zeros((n_models, n_models), dtype=bool)
    adjacency.flat[edges] = True
    start = int(np.flatnonzero(involved)[0])
    return all(_reached(graph, start)[involved].all() for graph in (adjacency, adjacency.T))


def _reached(adjacency: np.ndarray, start: int) -> np.ndarray:
    seen = np.zeros(adjacency.shape[0], dtype=bool)
    seen[start] = True
    frontier = seen.copy()
    while frontier.any():
        frontier = adjacency[frontier].any(axis=0) & ~seen
        seen |= frontier
    return seen


def mle_components(edges: np.ndarray, n_models: int, involved: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split models into the main strongly connected component of the credit graph and the rest.

    The Bradley-Terry MLE is finite exactly for a strongly connected credit graph (Zermelo/Ford). Returns
    boolean masks (main, above, below): ``above`` models reach the main component but are never reached from
    it (their scores diverge to +inf), ``below`` the reverse (-inf). Models in neither have no comparison with
    the main component at all. Only ``involved`` models (those with battles) are considered.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    graph = coo_matrix((np.ones(edges.size), (edges // n_models, edges % n_models)), shape=(n_models, n_models)).tocsr()
    _, labels = connected_components(graph, directed=True, connection="strong")
    sizes = np.bincount(labels[involved], minlength=labels.max() + 1)
    main = labels == int(np.argmax(sizes))  # ties: the component of the lowest model index
    seed = int(np.flatnonzero(main)[0])
    reached_from_main = np.zeros(n_models, dtype=bool)
    reached_from_main[breadth_first_order(graph, seed, directed=True, return_predecessors=False)] = True
    reaching_main = np.zeros(n_models, dtype=bool)
    reaching_main[breadth_first_order(graph.T.tocsr(), seed, directed=True, return_predecessors=False)] = True
    above = involved & ~main & reaching_main & ~reached_from_main
    below = involved & ~main & reached_from_main & ~reaching_main
    return main & involved, above, below


def _exclude_models(
    models: list[str], a: np.ndarray, b: np.ndarray, outcome: np.ndarray, count: np.ndarray, min_battles: int, *, finite_mle: bool = True
) -> tuple[np.ndarray, list[Exclusion]]:
    """Drop models below ``min_battles`` and (``finite_mle``) models without a finite MLE from the battles (rows
    of ``count`` battles each), repeating until neither remains; returns the models left with battles, and the
    others."""
    n = len(models)
    keep = np.ones(a.size, dtype=bool)
    excluded: list[Exclusion] = []
    while True:
        battles = (np.bincount(a[keep], count[keep], minlength=n) + np.bincount(b[keep], count[keep], minlength=n)).astype(np.int64)
        involved = battles > 0
        few = involved & (battles < min_battles)
        if few.any():
            excluded += [Exclusion(models[i], int(battles[i]), f"fewer than {min_battles} battles (--min-battles)") for i in np.flatnonzero(few)]
            keep &= ~few[a] & ~few[b]
            continue
        if not finite_mle:
            return involved, excluded
        edges = credit_edges(a[keep], b[keep], outcome[keep], n)
        if strongly_connected(edges, n, involved):
            return involved, excluded
        main, above, below = mle_components(edges, n, involved)
        out = involved & ~main
        kept_count, kept_outcome = count[keep], outcome[keep]
        wins = np.bincount(a[keep], kept_count * (kept_outcome >= TIE), minlength=n) + np.bincount(b[keep], kept_count * (kept_outcome <= TIE), minlength=n)
        losses = battles - np.bincount(a[keep], kept_count * (kept_outcome == A_WINS), minlength=n) - np.bincount(b[keep], kept_count * (kept_outcome == B_WINS), minlength=n)
        for i in np.flatnonzero(out):
            if losses[i] == 0:
                reason = "it never lost or tied, so its score has no finite maximum-likelihood value"
            elif wins[i] == 0:
                reason = "it never won or tied, so its score has no finite maximum-likelihood value"
            elif above[i] or below[i]:
                side = "won" if above[i] else "lost"
                reason = f"its group of models {side} every comparison with the others: no finite score relative to them"
            else:
                reason = "it is not connected by battles to the main group of models"
            excluded.append(Exclusion(models[i], int(battles[i]), reason))
        keep &= ~out[a] & ~out[b]


# ----------------------------------------------------------------------------------------------- designs


def _codes(keys: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique keys, index of each key among them); a bincount table when the key space is small.
    The index is 32-bit where it fits: one per battle, it is half the memory."""
    if size <= DENSE_KEYS:
        present = np.bincount(keys, minlength=size) > 0
        unique = np.flatnonzero(present)
        lookup = (np.cumsum(present) - 1).astype(_index_type(unique.size))
        return unique, lookup[keys]
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, inverse.astype(_index_type(unique.size), copy=False)


def _index_type(n: int) -> type[np.signedinteger]:
    return np.int32 if n < 2**31 else np.int64


def pair_keys(a: np.ndarray, b: np.ndarray, n_models: int) -> np.ndarray:
    """The key a·M + b of each ordered pair, 64-bit whatever the codes' width (M² passes 2^31 at 46,341 models)."""
    keys = a.astype(np.int64)
    keys *= n_models
    keys += b
    return keys


def cells(prepared: Prepared) -> Cells:
    """The (unordered pair, outcome) cells of the prepared battles, in sorted order."""
    M = prepared.n_models
    a, b = prepared.a, prepared.b
    outcome = np.where(a > b, A_WINS - prepared.outcome, prepared.outcome)
    keys = np.minimum(a, b).astype(np.int64)
    keys *= M
    keys += np.maximum(a, b)
    keys *= 3
    keys += outcome
    cell_keys, of_battle = _codes(keys, M * M * 3)  # one pass over the battles; the pairs follow from the cells
    unordered_pairs, pair = np.unique(cell_keys // 3, return_inverse=True)
    size = tally(of_battle, prepared.count, cell_keys.size)
    return Cells(
        of_battle=of_battle,
        size=size,
        pair=pair,
        outcome=(cell_keys % 3).astype(np.int8),
        pair_a=unordered_pairs // M,
        pair_b=unordered_pairs % M,
        weight=size if prepared.weight is None else np.bincount(of_battle, prepared.count * prepared.weight, minlength=cell_keys.size),
    )


def design(prepared: Prepared, cell_index: Cells, weight: np.ndarray | None = None) -> Design:
    """Per-battle rows with features, or with vote weights (one per prepared row); aggregated rows (cells, or
    cluster × cell) without either.

    ``weight``: per-row reweighting factors (:func:`pair_weights`; default 1), multiplied with the vote weights.
    """
    weight = ones(prepared.n_rows) if weight is None else weight
    if prepared.weight is not None:
        weight = weight * prepared.weight
    if prepared.features.shape[0] or prepared.weight is not None:
        # style features (the position term too) are signed by side, so battle rows keep their ordered pair;
        # weighted rows are resampled by vote (each carrying its weight), not by cell
        M = prepared.n_models
        ordered_pairs, row_pair = _codes(pair_keys(prepared.a, prepared.b, M), M * M)
        return Design(
            n_models=M, pair_a=ordered_pairs // M, pair_b=ordered_pairs % M, row_pair=row_pair, row_outcome=prepared.outcome,
            row_count=prepared.count, row_weight=weight, X=prepared.features,
            row_cell=cell_index.of_battle, row_cluster=prepared.cluster, aggregated=False, vote_weight=prepared.weight,
        )
    # Reweighting weights are constant within a pair, so aggregated rows keep them exactly.
    cell_weight = np.zeros(cell_index.n_cells)
    cell_weight[cell_index.of_battle] = weight
    if prepared.cluster is None:
        row_cell = np.arange(cell_index.n_cells)
        row_cluster, row_count = None, cell_index.size
    else:
        G = int(prepared.cluster.max()) + 1
        keys, inverse = _codes(prepared.cluster * cell_index.n_cells + cell_index.of_battle, G * cell_index.n_cells)
        row_cell, row_cluster = keys % cell_index.n_cells, keys // cell_index.n_cells
        row_count = tally(inverse, prepared.count, keys.size)
    return Design(
        n_models=prepared.n_models, pair_a=cell_index.pair_a, pair_b=cell_index.pair_b,
        row_pair=cell_index.pair[row_cell], row_outcome=cell_index.outcome[row_cell], row_count=row_count,
        row_weight=cell_weight[row_cell], X=np.zeros((0, row_cell.size)), row_cell=row_cell,
        row_cluster=row_cluster, aggregated=True,
    )


def record_counts(cell_index: Cells, n_models: int) -> dict[str, np.ndarray]:
    """Battles, wins, ties and losses per model in the fitted battles (from the pair-outcome cells)."""
    first, second = cell_index.pair_a[cell_index.pair], cell_index.pair_b[cell_index.pair]
    size, outcome = cell_index.size, cell_index.outcome

    def per_model(on_first: np.ndarray | float, on_second: np.ndarray | float) -> np.ndarray:
        totals = np.bincount(first, size * on_first, minlength=n_models) + np.bincount(second, size * on_second, minlength=n_models)
        return totals.round().astype(np.int64)

    battles = per_model(1.0, 1.0)
    wins = per_model(outcome == A_WINS, outcome == B_WINS)
    ties = per_model(outcome == TIE, outcome == TIE)
    return {"battles": battles, "wins": wins, "ties": ties, "losses": battles - wins - ties}
