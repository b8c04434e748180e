"""Features cached in the store, one table per (recipe, encoding, feature version), updated incrementally.

A cached row is keyed by ``battle_id`` and ``content_hash``: features are computed once per battle content,
and a battle whose features exist for the key is never recomputed. Each store part of battles is processed
and published on its own (an atomic ``store.write()``), so an interrupted run keeps the parts it finished
and memory stays bounded by one part's texts, whatever the size of the store.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

from arena_cli.errors import NoDataError
from arena_cli.features.compute import SOURCE_METADATA, SOURCE_TEXT, check_recipe, compute_features
from arena_cli.features.registry import FEATURE_VERSION, feature_columns, feature_key
from arena_cli.features.tokenizer import canonical_encoding, check_encoding
from arena_cli.io.store import Store
from arena_cli.schema import META_COLUMNS

KEYS = ["battle_id", "content_hash"]
FEATURE_COLUMNS = [*feature_columns(), "feature_source"]
#: What feature computation reads of a battle.
INPUT_COLUMNS = ["conversation_a", "conversation_b", *META_COLUMNS]


@dataclass(frozen=True)
class FeatureUpdate:
    """What one ``update_store_features`` run did."""

    table: str
    recipe: str
    encoding: str
    battles: int          # battles in the store
    cached_before: int    # battles that already had features for this key
    computed: int         # battles computed by this run
    from_text: int        # ... of which from their texts
    from_metadata: int    # ... from LMArena's conv_metadata (no texts)
    without: int          # ... with neither texts nor metadata (features null)
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)

    def message(self) -> str:
        what = f"{self.recipe} recipe, {self.encoding}, v{FEATURE_VERSION}"
        if self.computed == 0:
            return f"features up to date: {self.battles:,} battles ({what}); nothing to do"
        parts = [f"{self.from_text:,} from texts"]
        if self.from_metadata:
            parts.append(f"{self.from_metadata:,} from conv_metadata")
        if self.without:
            parts.append(f"{self.without:,} without texts or metadata")
        return (f"computed features of {self.computed:,} battles ({', '.join(parts)}) in {self.seconds:.1f} s; "
                f"{self.cached_before:,} were already cached ({what})")


def _open(store: Store | Path | str) -> Store:
    return store if isinstance(store, Store) else Store.open(store)


def _source_counts(features: pl.DataFrame) -> tuple[int, int, int]:
    source = features["feature_source"]
    return int((source == SOURCE_TEXT).sum()), int((source == SOURCE_METADATA).sum()), int(source.is_null().sum())


def pending_battles(store: Store, recipe: str = "default", encoding: str = "cl100k_base") -> pl.DataFrame:
    """Keys of the store's battles that have no cached features for (recipe, encoding)."""
    battles = store.scan("battles", KEYS)
    if battles is None:
        raise NoDataError(f"store {store.root} has no battles yet")
    cached = store.scan(feature_key(recipe, canonical_encoding(encoding)), KEYS)
    if cached is not None:
        battles = battles.join(cached, on=KEYS, how="anti")
    return battles.unique(KEYS).collect()


def update_store_features(
    store: Store | Path | str,
    recipe: str = "default",
    encoding: str = "cl100k_base",
    *,
    workers: int | None = None,
    lock_wait: float = 60.0,
    on_batch: Callable[[int], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> FeatureUpdate:
    """Compute and store the features of every battle that has none for (recipe, encoding, version).

    ``on_start`` gets the number of battles to compute, ``on_batch`` the number done after each batch.
    """
    check_recipe(recipe)
    check_encoding(encoding)
    store = _open(store)
    encoding = canonical_encoding(encoding)
    table = feature_key(recipe, encoding)
    start = time.perf_counter()
    total = store.rows("battles")
    pending = pending_battles(store, recipe, encoding)
    if on_start:
        on_start(pending.height)
    text = metadata = without = 0
    if pending.height:
        for part in store.parts("battles"):
            scan = pl.scan_parquet(part)
            present = set(scan.collect_schema().names())
            battles = (
                scan.select([c for c in [*KEYS, *INPUT_COLUMNS] if c in present])
                .join(pending.lazy(), on=KEYS, how="semi")
                .unique(KEYS, keep="first", maintain_order=True)
                .collect()
            )
            if battles.height == 0:
                continue
            features = compute_features(battles, recipe, encoding, workers, on_batch=on_batch)
            features = features.insert_column(1, battles["content_hash"])
            counts = _source_counts(features)
            text, metadata, without = text + counts[0], metadata + counts[1], without + counts[2]
            with store.write(wait=lock_wait) as tx:
                tx.add(table, features)
                tx.log({"action": "features", "table": table, "battles": features.height,
                        "from_text": counts[0], "from_metadata": counts[1], "without": counts[2]})
    computed = text + metadata + without
    return FeatureUpdate(table, recipe, encoding, total, total - pending.height, computed, text, metadata, without,
                         time.perf_counter() - start)


def attach_features(
    battles: pl.DataFrame,
    *,
    store: Store | Path | str | None = None,
    recipe: str = "default",
    encoding: str = "cl100k_base",
    workers: int | None = None,
) -> pl.DataFrame:
    """``battles`` with every ``<name>_a``/``<name>_b`` feature column and ``feature_source`` joined.

    With a store, cached features are used and the others computed in memory (the store is not written;
    ``arena features`` fills the cache). Texts missing from ``battles`` (a frame loaded with few columns)
    are read from the store. Battles with no texts use their ``meta_*`` counts when they have them.
    """
    check_recipe(recipe)
    check_encoding(encoding)
    encoding = canonical_encoding(encoding)
    base = battles.drop([c for c in FEATURE_COLUMNS if c in battles.columns])
    keys = KEYS if "content_hash" in base.columns else ["battle_id"]
    wanted = base.select(keys).unique()
    opened = _open(store) if store is not None else None
    found: list[pl.DataFrame] = []
    if opened is not None:
        cached = opened.scan(feature_key(recipe, encoding), [*keys, *FEATURE_COLUMNS])
        if cached is not None:
            found.append(cached.join(wanted.lazy(), on=keys, how="semi").unique(keys, keep="first").collect())
    missing = wanted.join(found[0], on=keys, how="anti") if found else wanted
    if missing.height:
        inputs = base.join(missing, on=keys, how="semi").unique(keys, keep="first", maintain_order=True)
        has_texts = {"conversation_a", "conversation_b"} <= set(inputs.columns)
        if opened is not None and not has_texts and opened.rows("battles"):
            stored = opened.scan("battles", [*keys, *INPUT_COLUMNS]).join(missing.lazy(), on=keys, how="semi")
            inputs = inputs.select(keys).join(stored.unique(keys, keep="first").collect(), on=keys, how="left", maintain_order="left")
        computed = compute_features(inputs, recipe, encoding, workers)
        found.append(pl.concat([inputs.select(keys), computed.drop("battle_id")], how="horizontal"))
    features = pl.concat(found, how="vertical_relaxed") if found else None
    if features is None:
        return base
    return base.join(features.select(*keys, *FEATURE_COLUMNS), on=keys, how="left", maintain_order="left")


def feature_sources(store: Store | Path | str) -> pl.DataFrame:
    """Per cached feature set of the store: how many battles' features came from texts, from LMArena's
    conv_metadata, or from neither (for ``arena info``)."""
    store = _open(store)
    rows = []
    for table in store.tables():
        if not table.startswith("features/"):
            continue
        source = store.read(table, ["feature_source"])["feature_source"]
        rows.append({
            "feature_set": table.removeprefix("features/"),
            "battles": source.len(),
            "from_text": int((source == SOURCE_TEXT).sum()),
            "from_metadata": int((source == SOURCE_METADATA).sum()),
            "without_features": int(source.is_null().sum()),
        })
    schema = {"feature_set": pl.String, "battles": pl.Int64, "from_text": pl.Int64, "from_metadata": pl.Int64, "without_features": pl.Int64}
    return pl.DataFrame(rows, schema=schema)
