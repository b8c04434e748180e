"""Features cached in the store, one table per feature family and version, updated incrementally.

Layout: each family the registry stores (``Family.stored``: every family computed from texts) has its own table
``features/<family>[-<recipe>][-<encoding>]-v<version>``, where the recipe and the encoding appear only if the
family's values depend on them::

    features/tokens-cl100k_base-v1      tokens (any recipe)
    features/markdown-default-v1        LMArena's markdown counts under the default recipe (any encoding)
    features/structure-v1               code blocks, tables, links, emoji (any recipe, any encoding)

with columns ``battle_id``, ``content_hash``, the family's ``<feature>_a`` / ``<feature>_b`` and
``feature_source``. So another recipe recomputes only the markdown counts, another encoding only the tokens,
and a new family or a family's new version only that family. Derived families (the densities) are not stored:
they are computed from the stored ones whenever features are read.

A cached row is keyed by ``battle_id`` and ``content_hash``: features are computed once per battle content,
and a battle whose family features exist for the key is never recomputed. Each store part of battles is
processed on its own (memory stays bounded by one part's texts, whatever the size of the store), and what is
computed is published every :data:`WRITE_BATTLES` battles or :data:`WRITE_SECONDS` (an atomic ``store.write()``),
so an interrupted run keeps what it published.

Stores written before families had their own tables hold every feature of a (recipe, encoding) in one table
``features/<recipe>-<encoding>-v1``. Such a table is read, never rewritten, as the version-1 values of each
family whose columns it has (the tokens of any recipe, the markdown counts of its recipe, ...).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from arena_cli.errors import NoDataError
from arena_cli.features import registry
from arena_cli.features.compute import SOURCE_METADATA, SOURCE_TEXT, compute_features, derive, features_schema
from arena_cli.features.registry import Family, check_families, check_recipe, feature_columns
from arena_cli.features.tokenizer import canonical_encoding, check_encoding
from arena_cli.io.options import DEFAULT_ENCODING, DEFAULT_RECIPE, RECIPES
from arena_cli.io.index import SortedRuns
from arena_cli.io.store import Store
from arena_cli.schema import META_COLUMNS

KEYS = ["battle_id", "content_hash"]
#: Every feature column of the registry, then feature_source: the columns of a features frame after battle_id.
FEATURE_COLUMNS = [*feature_columns(), "feature_source"]
#: What feature computation reads of a battle.
INPUT_COLUMNS = ["conversation_a", "conversation_b", *META_COLUMNS]
#: The family version that the older one-table layout holds.
LEGACY_VERSION = 1


@dataclass(frozen=True)
class FeatureUpdate:
    """What one ``update_store_features`` run did."""

    tables: tuple[str, ...]    # the cache tables of this recipe and encoding, one per stored family
    recipe: str
    encoding: str
    battles: int               # battles in the store
    cached_before: int         # battles that already had every family's features for this key
    computed: int              # battles computed by this run (some of their families, or all)
    from_text: int             # ... of which from their texts
    from_metadata: int         # ... from LMArena's conv_metadata (no texts)
    without: int               # ... with neither texts nor metadata (features null)
    families: tuple[str, ...]  # the families computed for some battle
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def message(self) -> str:
        what = f"{self.recipe} recipe, {self.encoding}"
        if self.computed == 0:
            return f"features up to date: {self.battles:,} battles ({what}); nothing to do"
        parts = [f"{self.from_text:,} from texts"]
        if self.from_metadata:
            parts.append(f"{self.from_metadata:,} from conv_metadata")
        if self.without:
            parts.append(f"{self.without:,} without texts or metadata")
        return (f"computed features of {self.computed:,} battles ({', '.join(parts)}) in {self.seconds:.1f} s, "
                f"families {', '.join(self.families)}; {self.cached_before:,} were already cached ({what})")


def _open(store: Store | Path | str) -> Store:
    return store if isinstance(store, Store) else Store.open(store)


def _stored() -> tuple[Family, ...]:
    return tuple(f for f in check_families(registry.FAMILIES) if f.stored)


def _family_columns(family: Family) -> list[str]:
    return [*feature_columns(family.names), "feature_source"]


def _legacy_tables(store: Store) -> list[tuple[str, str, str]]:
    """The store's tables of the one-table layout, ``features/<recipe>-<encoding>-v1``: (table, recipe, encoding)."""
    found = []
    for table in store.tables():
        recipe, _, rest = table.removeprefix("features/").partition("-")
        encoding, _, version = rest.rpartition("-v")
        if table.startswith("features/") and recipe in RECIPES and version == str(LEGACY_VERSION):
            found.append((table, recipe, encoding))
    return found


def _sources(store: Store, family: Family, recipe: str, encoding: str) -> list[str]:
    """The tables holding the family's features for (recipe, encoding): its own, and older-layout ones."""
    tables = [family.key(recipe, encoding)]
    if family.version == LEGACY_VERSION:
        columns = set(_family_columns(family))
        for table, old_recipe, old_encoding in _legacy_tables(store):
            if family.recipe and old_recipe != recipe or family.encoding and old_encoding != encoding:
                continue
            scan = store.scan(table)
            if scan is not None and columns <= set(scan.collect_schema().names()):
                tables.append(table)
    return tables


def _cached(store: Store, family: Family, recipe: str, encoding: str, keys: list[str]) -> pl.LazyFrame | None:
    """The family's cached rows (keys, its columns, feature_source), one per key; None when nothing is cached."""
    columns = [*keys, *_family_columns(family)]
    scans = [scan for table in _sources(store, family, recipe, encoding) if (scan := store.scan(table, columns)) is not None]
    if len(scans) <= 1:
        return scans[0] if scans else None
    return pl.concat(scans, how="diagonal_relaxed").unique(keys, keep="first", maintain_order=True)


def _flag_missing(battles: pl.LazyFrame, cached: dict[str, pl.LazyFrame | None], keys: list[str]) -> pl.LazyFrame:
    """``battles`` (unique keys) with a boolean column per family of ``cached``: whether the battle has none."""
    for name, rows in cached.items():
        if rows is None:
            battles = battles.with_columns(pl.lit(True).alias(name))
        else:
            present = rows.select(keys).with_columns(pl.lit(False).alias(name))
            battles = battles.join(present, on=keys, how="left").with_columns(pl.col(name).fill_null(True))
    return battles


def _compute_missing(
    inputs: pl.DataFrame, families: Sequence[Family], keys: list[str], recipe: str, encoding: str,
    workers: int | None, on_batch: Callable[[int], None] | None = None,
) -> tuple[dict[str, pl.DataFrame], pl.Series]:
    """Features of the battles of ``inputs`` for the families each misses (its boolean column per family):
    per family, rows of keys, the family's columns and feature_source; and the source of every battle."""
    names = [f.name for f in families]
    computed: dict[str, list[pl.DataFrame]] = {name: [] for name in names}
    sources = []
    for flags, group in inputs.group_by(names, maintain_order=True):
        chosen = [name for name, missing in zip(names, flags) if missing]
        features = compute_features(group.drop(names), recipe, encoding, workers, on_batch, families=chosen)
        features = pl.concat([group.select(keys), features.drop("battle_id")], how="horizontal")
        sources.append(features["feature_source"])
        for family in families:
            if family.name in chosen:
                computed[family.name].append(features.select(*keys, *_family_columns(family)))
    source = pl.concat(sources) if sources else pl.Series("feature_source", [], dtype=pl.String)
    return {name: pl.concat(frames) for name, frames in computed.items() if frames}, source


#: A battle's bit in :class:`_CacheView` once a part of the run has met its key (the bits below are the families').
_MET = 1 << 63


class _CacheView:
    """Which stored families the store caches features of for each battle key, and which keys a run has met: the
    cache tables' parts are read once, and then only the parts that appear later (another run's, found under the
    write lock), so that a run's lookups cost O(log n) per battle. (Each part of battles joined with every
    pending battle, and each part's features checked against the whole cache, made a run quadratic in the store:
    a 10M-battle store took minutes per million.)

    Keys are held as 128-bit fingerprints (two hashes of ``battle_id`` and ``content_hash``) with a bit per family,
    24 bytes a battle (:class:`~arena_cli.io.index.SortedRuns`): two keys share one with odds of about n²/2^128."""

    def __init__(self, families: Sequence[Family], recipe: str, encoding: str):
        self.families = tuple(families)
        self.recipe, self.encoding = recipe, encoding
        self.bits = {family.name: 1 << number for number, family in enumerate(families)}
        self.keys = SortedRuns("sum")
        self.taken: set[tuple[str, str]] = set()  # (family, part path) of the cache parts read

    def take_in(self, store: Store) -> bool:
        """Read the cache parts of the store's manifest that the view has not read yet; whether there were any."""
        read = False
        for family in self.families:
            for table in _sources(store, family, self.recipe, self.encoding):
                for entry in store.manifest["tables"].get(table, []):
                    if (family.name, entry["path"]) not in self.taken:
                        first, second = _key_words(store.read_part(table, entry["path"], KEYS).unique(KEYS))
                        bit = np.uint64(self.bits[family.name])
                        new = self.keys.get(first, second)[1] & bit == 0  # (a legacy table and its successor may share keys)
                        self.keys.add(first[new], second[new], np.full(int(new.sum()), bit))
                        self.taken.add((family.name, entry["path"]))
                        read = True
        return read

    def staged(self, store: Store, staged: Sequence[tuple[str, Path, Any]], family: Family) -> None:
        """Note the parts a transaction staged for ``family`` as read: the run's own, which it need not check."""
        tables = set(_sources(store, family, self.recipe, self.encoding)) | {family.key(self.recipe, self.encoding)}
        self.taken.update((family.name, path.relative_to(store.root).as_posix()) for table, path, _ in staged if table in tables)


def _key_words(keys: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    words = keys.select(_key_hash(0).alias("first"), _key_hash(1).alias("second"))
    return words["first"].to_numpy(), words["second"].to_numpy()


def _plan(store: Store, families: Sequence[Family], recipe: str, encoding: str) -> tuple[_CacheView, list[np.ndarray], int]:
    """The run's view of the cache; per part of battles (in the order of ``store.scan_parts``) the families each of
    its rows must be computed for, as bits (0: none): a battle's first row in the store, for each family whose
    features the cache lacks; and how many of the store's battles (rows) had every family's features cached. Reads
    the key columns only, a part at a time."""
    view = _CacheView(families, recipe, encoding)
    view.take_in(store)
    every, met = np.uint64(sum(view.bits.values())), np.uint64(_MET)
    plan, cached = [], 0
    for part in store.scan_parts("battles", KEYS):
        keys = part.collect()
        first, second = _key_words(keys)
        bits = view.keys.get(first, second)[1]
        new = keys.select(pl.struct(KEYS).is_first_distinct()).to_series().to_numpy() & (bits & met == 0)
        missing = np.where(new, ~bits & every, np.uint64(0))
        plan.append(missing.astype(np.min_scalar_type(int(every))))
        cached += int(np.count_nonzero(bits & every == every))
        computed = missing != 0  # (a battle whose features are all cached is cached wherever it is met again)
        view.keys.add(first[computed], second[computed], np.full(int(computed.sum()), met))
    return view, plan, cached


def _flagged(rows: pl.DataFrame, missing: np.ndarray, view: _CacheView) -> pl.DataFrame:
    """The rows of a part that ``missing`` gives bits, with a boolean column per family: whether it is missing."""
    taken = missing != 0
    return rows.filter(pl.Series(taken)).with_columns(pl.Series(name, missing[taken] & bit != 0) for name, bit in view.bits.items())


#: A run publishes the features it computed once it has this many battles' (or has computed for this many seconds):
#: every write checks each part of the store under the lock, so that a write per part of battles made a run over
#: many parts quadratic (80 parts of one battle each took 8 s), while an interrupted run keeps what it published.
WRITE_BATTLES = 1_000_000
WRITE_SECONDS = 30.0


def update_store_features(
    store: Store | Path | str,
    recipe: str = DEFAULT_RECIPE,
    encoding: str = DEFAULT_ENCODING,
    *,
    workers: int | None = None,
    lock_wait: float = 60.0,
    on_batch: Callable[[int], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> FeatureUpdate:
    """Compute and store, family by family, the features of every battle that has none for (recipe, encoding,
    the family's version).

    ``on_start`` gets the number of battles to compute, ``on_batch`` the number done after each batch.
    """
    check_recipe(recipe)
    check_encoding(encoding)
    store = _open(store)
    encoding = canonical_encoding(encoding)
    if store.scan("battles", KEYS) is None:
        raise NoDataError(f"store {store.root} has no battles yet")
    families = _stored()
    names = [f.name for f in families]
    start = time.perf_counter()
    total = store.rows("battles")
    view, plan, cached = _plan(store, families, recipe, encoding)
    parts = store.scan_parts("battles", [*KEYS, *INPUT_COLUMNS])  # (as the plan read them: the store's manifest is refreshed by a write)
    pending = sum(int(np.count_nonzero(missing)) for missing in plan)
    if on_start:
        on_start(pending)
    totals = [0, 0, 0]  # computed from texts, from metadata, without either
    done: set[str] = set()
    computed: dict[str, list[pl.DataFrame]] = {}
    sources: list[pl.Series] = []
    written = time.perf_counter()

    def publish() -> None:
        source = pl.concat(sources)
        counts = int((source == SOURCE_TEXT).sum()), int((source == SOURCE_METADATA).sum()), int(source.is_null().sum())
        with store.write(wait=lock_wait) as tx:
            foreign = view.take_in(store)  # another run's parts: it may have cached some of them since the plan was made
            for family in families:
                if family.name in computed:
                    rows = pl.concat(computed[family.name])
                    if foreign:
                        rows = rows.filter(pl.Series(view.keys.get(*_key_words(rows.select(KEYS)))[1] & np.uint64(view.bits[family.name]) == 0))
                    tx.add(family.key(recipe, encoding), rows)
                    view.staged(store, tx.staged, family)
            tx.log({"action": "features", "tables": [f.key(recipe, encoding) for f in families if f.name in computed],
                    "battles": source.len(), "from_text": counts[0], "from_metadata": counts[1], "without": counts[2]})
        for i, count in enumerate(counts):
            totals[i] += count
        computed.clear()
        sources.clear()

    for part, missing in zip(parts, plan):
        if not missing.any():
            continue
        battles = _flagged(part.collect(), missing, view)
        features, source = _compute_missing(battles, families, KEYS, recipe, encoding, workers, on_batch)
        for name, rows in features.items():
            computed.setdefault(name, []).append(rows)
        sources.append(source)
        done.update(features)
        if sum(s.len() for s in sources) >= WRITE_BATTLES or time.perf_counter() - written >= WRITE_SECONDS:
            publish()
            written = time.perf_counter()
    if sources:
        publish()
    return FeatureUpdate(
        tuple(f.key(recipe, encoding) for f in families), recipe, encoding, total, cached,
        sum(totals), totals[0], totals[1], totals[2], tuple(n for n in names if n in done), time.perf_counter() - start,
    )


def attach_features(
    battles: pl.DataFrame,
    *,
    store: Store | Path | str | None = None,
    recipe: str = DEFAULT_RECIPE,
    encoding: str = DEFAULT_ENCODING,
    workers: int | None = None,
) -> pl.DataFrame:
    """``battles`` with every ``<name>_a``/``<name>_b`` feature column and ``feature_source`` joined.

    With a store, cached features are used and, family by family, the others computed in memory (the store is
    not written; ``arena features`` fills the cache). Texts missing from ``battles`` (a frame loaded with few
    columns) are read from the store. Battles with no texts use their ``meta_*`` counts when they have them.
    """
    check_recipe(recipe)
    check_encoding(encoding)
    encoding = canonical_encoding(encoding)
    families = check_families(registry.FAMILIES)
    stored = [f for f in families if f.stored]
    schema = features_schema(families)
    columns = list(schema)[1:]
    base = battles.drop([c for c in columns if c in battles.columns])
    if base.height == 0:
        return base.with_columns(pl.lit(None, schema[c]).alias(c) for c in columns)
    keys = KEYS if "content_hash" in base.columns else ["battle_id"]
    wanted = base.select(keys).unique()
    opened = _open(store) if store is not None else None
    found: dict[str, pl.DataFrame] = {}
    if opened is not None:
        for family in stored:
            cached = _cached(opened, family, recipe, encoding, keys)
            if cached is not None:
                found[family.name] = cached.join(wanted.lazy(), on=keys, how="semi").collect()
    cached_any = bool(found)
    flagged = _flag_missing(wanted.lazy(), {f.name: found[f.name].lazy() if f.name in found else None for f in stored}, keys)
    missing = flagged.filter(pl.any_horizontal(f.name for f in stored)).collect()
    if missing.height:
        inputs = base.join(missing, on=keys, how="semi").unique(keys, keep="first", maintain_order=True)
        has_texts = {"conversation_a", "conversation_b"} <= set(inputs.columns)
        stored_texts = opened.scan("battles", [*keys, *INPUT_COLUMNS]) if opened is not None and not has_texts else None
        if stored_texts is not None:
            texts = stored_texts.join(missing.lazy(), on=keys, how="semi").unique(keys, keep="first").collect()
            inputs = inputs.select(keys).join(texts, on=keys, how="left", maintain_order="left")
        computed, _ = _compute_missing(inputs.join(missing, on=keys, how="left"), stored, keys, recipe, encoding, workers)
        for name, rows in computed.items():
            found[name] = pl.concat([found[name], rows], how="vertical_relaxed") if name in found else rows
    if cached_any:
        features = wanted
        for family in stored:
            features = features.join(found[family.name].rename({"feature_source": f"source_{family.name}"}), on=keys, how="left")
    else:  # nothing was cached: every family was computed for the same battles, in the same order
        features = pl.concat(
            [found[stored[0].name].select(keys), *(found[f.name].drop(keys).rename({"feature_source": f"source_{f.name}"}) for f in stored)],
            how="horizontal",
        )
    features = features.with_columns(pl.coalesce(f"source_{f.name}" for f in stored).alias("feature_source"))
    features = derive(features, families, recipe, encoding).select(*keys, *(pl.col(c).cast(schema[c]) for c in columns))
    return base.join(features, on=keys, how="left", maintain_order="left")


class CachedCounts:
    """The cached values of some stored features, to join to battles part by part (:meth:`__call__`): a fit
    reads each battle's few counts as it reads the battle, never the whole cache beside whole battles.

    Joined on a 64-bit hash of the key (``battle_id``, ``content_hash``) and checked on a second one: hashing
    the string keys whole for the join would cost far more memory than the counts. A battle without cached
    values (or, at odds of 2^-128, a key whose hashes both collide with another's) gets nulls.
    """

    def __init__(self, tables: list[tuple[pl.LazyFrame, list[str]]]):
        self.tables = tables  # per family: its cached rows (hashed key, check, wanted columns), the wanted columns

    @classmethod
    def of(cls, store: Store | Path | str, names: Sequence[str], recipe: str = DEFAULT_RECIPE, encoding: str = DEFAULT_ENCODING) -> CachedCounts | None:
        """The cached values of the features ``names``; None when some is not cached (its family has no table
        yet, or is derived)."""
        store, encoding = _open(store), canonical_encoding(encoding)
        schema = features_schema()
        by_name = {name: family for family in _stored() for name in family.names}
        if not all(name in by_name for name in names):
            return None
        tables = []
        for family in dict.fromkeys(by_name[name] for name in names):
            wanted = feature_columns([name for name in names if by_name[name] is family])
            cached = _cached(store, family, recipe, encoding, KEYS)
            if cached is None:
                return None
            rows = cached.select(_key_hash(0).alias("__key"), _key_hash(1).alias("__cached"), *(pl.col(c).cast(schema[c]) for c in wanted))
            tables.append((rows, wanted))
        return cls(tables)

    def __call__(self, battles: pl.LazyFrame) -> pl.LazyFrame:
        """``battles`` (with the key columns; in their order) with the cached columns."""
        joined = battles.with_columns(_key_hash(0).alias("__key"), _key_hash(1).alias("__check"))
        for rows, wanted in self.tables:
            joined = joined.drop(wanted, strict=False).join(rows, on="__key", how="left", maintain_order="left")
            same = pl.col("__cached") == pl.col("__check")
            joined = joined.with_columns(pl.when(same).then(pl.col(c)).alias(c) for c in wanted).drop("__cached")
        return joined.drop("__key", "__check")


def _key_hash(seed: int) -> pl.Expr:
    return pl.struct(KEYS).hash(seed)


def read_store_features(store: Store | Path | str, recipe: str = DEFAULT_RECIPE, encoding: str = DEFAULT_ENCODING) -> pl.DataFrame:
    """``battle_id`` and every feature column of each battle of the store, from its cache (what is missing is
    computed in memory, as :func:`attach_features` does)."""
    store = _open(store)
    battles = store.scan("battles", KEYS)
    if battles is None:
        raise NoDataError(f"store {store.root} has no battles yet")
    keys = battles.unique(KEYS, keep="first", maintain_order=True).collect()
    return attach_features(keys, store=store, recipe=recipe, encoding=encoding).drop("content_hash")


def feature_sources(store: Store | Path | str) -> pl.DataFrame:
    """Per cached feature table of the store: how many battles' features came from texts, from LMArena's
    conv_metadata, or from neither (for ``arena info``)."""
    store = _open(store)
    rows = []
    for table in store.tables():
        if not table.startswith("features/"):
            continue
        frame = store.read(table, ["feature_source"])
        if frame is None:
            continue
        source = frame["feature_source"]
        rows.append({
            "feature_set": table.removeprefix("features/"),
            "battles": source.len(),
            "from_text": int((source == SOURCE_TEXT).sum()),
            "from_metadata": int((source == SOURCE_METADATA).sum()),
            "without_features": int(source.is_null().sum()),
        })
    schema = {"feature_set": pl.String, "battles": pl.Int64, "from_text": pl.Int64, "from_metadata": pl.Int64, "without_features": pl.Int64}
    return pl.DataFrame(rows, schema=schema)
