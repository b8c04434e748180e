"""``arena store check`` and ``arena store repair``: say what is wrong with a store, and rebuild a consistent
manifest from the parts on disk without ever deleting data.

Repair reads every part whole (damage inside a part's data shows only then) and keeps every listed part that
is readable (fixing its row count from the file), gives a listed file of a table's folder under another name (a
part a user renamed) a part's name back when it would be kept, adopts unlisted parts that
were published (a generation the manifest has reached, see :mod:`arena_cli.io.manifest`) when they are readable,
have the table's schema and repeat no battle already kept, and moves everything else out of the table folders
into ``lost+found/`` (same relative path): unreadable or truncated parts, parts of a wrong schema, and parts
that were never published — a run killed before it published staged them, so adopting them would add half a
run. Their battles come back, without duplicates, with ``arena ingest STORE/lost+found/battles/part-….parquet``
(battles already stored are counted as duplicates). Entries the manifest cannot keep (a missing part, a path
outside the store, a second listing) are dropped. Files that are not the store's are left alone.

When the manifest is missing or unreadable, the parts its text still names count as listed and a generation
in its text is used; when nothing is left to tell which parts were published, the parts of the highest
generation on disk are taken as unpublished (``adopt_unpublished`` adopts them too, after the same checks).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import uuid
from contextlib import nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena_cli.errors import InputError
from arena_cli.io.atomic import atomic_write, atomic_write_bytes, fsync_dir
from arena_cli.io.fields import MAX_COUNT
from arena_cli.io.files import scan_parquet
from arena_cli.io.manifest import (
    FORMAT,
    FORMAT_VERSION,
    LOST_AND_FOUND,
    MANIFEST,
    Entry,
    TABLE_NAME,
    TEMPORARY_NAME,
    Problem,
    aside_path,
    by_importance,
    check_part,
    entries,
    footer,
    in_folder,
    is_count,
    layout_problems,
    listed_problems,
    misnamed,
    part_files,
    part_generation,
    read_data,
    read_manifest,
    table_of,
    union_with,
    unreadable_data,
)
from arena_cli.io.store import Store, writing
from arena_cli.schema import META_COLUMNS, QuarantineReason

if TYPE_CHECKING:
    import polars as pl

    from arena_cli.render.document import Document

#: A part path as a damaged manifest's text still names it.
_LISTED_PATH = re.compile(rf'"path"\s*:\s*"((?:{TABLE_NAME.pattern})/[^"\\]+)"')
_GENERATION = re.compile(r'"generation"\s*:\s*(\d+)')
#: What to do with a never-published part once it is in lost+found, per table folder.
_BRING_BACK = {"battles": "`arena ingest` of the moved file adds its battles not stored yet",
               "features": "`arena features` computes what the store lacks"}


@dataclass(frozen=True)
class StoreCheck:
    """What ``arena store check`` found: every problem (errors make the store unusable until repaired; notes
    do not), and per table its parts and rows as the manifest lists them."""

    root: Path
    problems: tuple[Problem, ...]
    tables: dict[str, dict[str, int]]
    settings: dict[str, Any] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def healthy(self) -> bool:
        return not any(p.error for p in self.problems)

    def message(self) -> str:
        errors = [p for p in self.problems if p.error]
        if not errors:
            parts = sum(t["parts"] for t in self.tables.values())
            return f"store {self.root} is consistent: {_plural(parts, 'part')} in {_plural(len(self.tables), 'table')}"
        return f"store {self.root} is damaged: {_plural(len(errors), 'problem')}, first: {errors[0].detail}"

    def to_document(self) -> Document:
        from arena_cli.render.store import check_document

        return check_document(self)


@dataclass(frozen=True)
class Change:
    """One thing a repair does: ``keep`` a part a damaged manifest names, ``adopt`` an unlisted part, ``fix``
    an entry's rows (or the generation), ``drop`` an entry, ``move`` a file to lost+found, ``rewrite`` the
    manifest."""

    action: str
    path: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"action": self.action, "path": self.path, "detail": self.detail}


@dataclass(frozen=True)
class StoreRepair:
    """What ``arena store repair`` did (or, with ``dry_run``, would do), and the tables afterwards."""

    root: Path
    changes: tuple[Change, ...]
    tables: dict[str, dict[str, int]]
    dry_run: bool = False
    battles_set_aside: int = 0
    battles_quarantined: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def message(self) -> str:
        if not self.changes:
            return f"store {self.root} is consistent: nothing to repair"
        moved = sum(c.action == "move" for c in self.changes)
        battles = f" ({_plural(self.battles_set_aside, 'battle')} set aside)" if self.battles_set_aside else ""
        aside = f"; {_plural(moved, 'file')} {'would be ' if self.dry_run else ''}moved to {self.root / LOST_AND_FOUND}{battles}" if moved else ""
        if self.battles_quarantined:
            aside += f"; {_plural(self.battles_quarantined, 'battle')} with an invalid count {'would be ' if self.dry_run else ''}moved to the quarantine"
        return f"repair {'would make' if self.dry_run else 'made'} {_plural(len(self.changes), 'change')} to store {self.root}{aside}"

    def to_document(self) -> Document:
        from arena_cli.render.store import repair_document

        return repair_document(self)


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _tables(manifest: dict[str, Any] | None) -> dict[str, dict[str, int]]:
    """Per table of a manifest, its parts and rows as listed."""
    tables: dict[str, dict[str, int]] = {}
    for entry in entries(manifest) if manifest is not None else []:
        counts = tables.setdefault(entry.table, {"parts": 0, "rows": 0})
        counts["parts"] += 1
        counts["rows"] += entry.rows
    return tables


def _root(store: Path) -> Path:
    if not store.exists():
        raise InputError(f"no store at {store}")
    if not store.is_dir():
        raise InputError(f"store {store} is a file, not a store directory")
    return store


def check_store(store: Path, deep: bool = False) -> StoreCheck:
    """Every problem of the store at ``store``: the manifest, each listed part (its footer: schema, rows; with
    ``deep``, every page of its data too) and the files the manifest does not list."""
    root = _root(store)
    manifest, problems = read_manifest(root)
    if manifest is None and not problems:
        raise InputError(f"no store at {root} (no {MANIFEST}, no parts)")
    if manifest is not None:
        problems += listed_problems(root, manifest, deep=True, data=deep) + layout_problems(root, manifest)
        unreadable = {p.path for p in problems if p.error}
        problems += [p for e in entries(manifest) if e.table == "battles" and e.path not in unreadable
                     and (p := _count_problem(root, e)) is not None]
    return StoreCheck(root, tuple(by_importance(problems)), _tables(manifest), settings={"deep": deep},
                      inputs={"files": [], "store": str(root)})


def _counts_of(file: Path) -> list[str]:
    """The ``meta_*`` count columns a battles part stores as integers."""
    schema = footer(file)[1]
    return [c for c in META_COLUMNS if c in schema and schema[c].is_integer()]


def _invalid(columns: list[str]) -> pl.Expr:
    """Battles with a ``meta_*`` count that is not a whole number from 0 to 2^53-1: a store written before counts
    were checked may hold some (a negative count), and every style fit refuses them."""
    import polars as pl

    return pl.any_horizontal([(pl.col(c) < 0) | (pl.col(c) > MAX_COUNT) for c in columns]).fill_null(False)


def _count_problem(root: Path, entry: Entry) -> Problem | None:
    """A battles part holding battles with an invalid count, read from its count columns only (those the
    manifest's null counts do not say are empty)."""
    import polars as pl

    path = entry.path
    columns = [c for c in _counts_of(root / path) if entry.nulls is None or entry.nulls.get(c, 0) < entry.rows]
    if not columns:
        return None
    try:
        bad = scan_parquet(root / path).select("battle_id", *columns).filter(_invalid(columns)).collect(engine="streaming")
    except (OSError, pl.exceptions.PolarsError, pl.exceptions.PanicException) as error:
        return unreadable_data(path, error)
    if not bad.height:
        return None
    first = bad.row(0, named=True)
    column = next(c for c in columns if first[c] is not None and not 0 <= first[c] <= MAX_COUNT)
    return Problem("invalid_count", path, f"{path}: {_plural(bad.height, 'battle')} with a count that is not a whole number from 0 to "
                                          f"2^53-1 (first: {first['battle_id']}, {column} {first[column]}), which every style fit refuses")


def _quarantined(battles: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """Battles with an invalid count as quarantine rows: reason wrong_type, the count named in the detail, the
    whole battle as JSON in ``raw`` (nothing of it is lost)."""
    import polars as pl

    from arena_cli.io.canonical import COUNT
    from arena_cli.schema import QUARANTINE_SCHEMA

    detail = pl.coalesce([pl.when((pl.col(c) < 0) | (pl.col(c) > MAX_COUNT)).then(pl.format(f"{c}: {COUNT}, found in the store: {{}}", pl.col(c)))
                          for c in columns])
    return battles.select(
        pl.col("source_file").cast(pl.String), pl.col("source_row").cast(pl.Int64), pl.lit(QuarantineReason.WRONG_TYPE.value).alias("reason"),
        detail.alias("detail"), pl.struct(pl.all()).struct.json_encode().alias("raw"), pl.lit(None, pl.Binary).alias("raw_bytes"),
    ).cast(QUARANTINE_SCHEMA)  # type: ignore[arg-type]


# -------------------------------------------------------------------------------------------------- repair


@dataclass
class _Plan:
    """A repair worked out before anything is touched: the parts kept, the files moved, the changes."""

    root: Path
    log: list[Any]
    generation: int = 0
    guessed: bool = False  # no manifest said which generation was published
    kept: dict[str, dict[str, Any]] = field(default_factory=dict)   # path -> manifest entry
    tables: dict[str, str] = field(default_factory=dict)            # path -> table
    files: dict[str, Path] = field(default_factory=dict)            # path -> the file that holds it now
    renames: list[tuple[str, str]] = field(default_factory=list)    # (a listed file's name, the part name it gets)
    splits: list[tuple[str, str | None, str, pl.DataFrame]] = field(default_factory=list)  # (part, its valid battles', its quarantine's)
    listed: set[str] = field(default_factory=set)                    # what the manifest listed: moved only once it does not
    staging: int = 1                                                 # the generation of the parts the repair writes
    moves: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    unions: dict[str, dict[str, Any]] = field(default_factory=dict)
    battle_ids: pl.DataFrame | None = None
    battles_aside: int = 0  # battles in the parts moved to lost+found
    battles_quarantined: int = 0  # battles with an invalid count, moved to the quarantine

    def keep(self, table: str, path: str, rows: int, nulls: dict[str, int], schema: dict[str, Any], file: str | None = None) -> None:
        self.kept[path] = {"path": path, "rows": rows, "nulls": nulls}
        self.tables[path] = table
        self.files[path] = self.root / (file or path)
        self.unions[table] = union_with(self.unions.get(table, {}), schema)
        if table == "battles" and self.battle_ids is not None:
            self.battle_ids = self.battle_ids.vstack(_battle_ids(self.files[path]))

    def move(self, path: str, detail: str) -> None:
        self.moves.append(path)
        self.changes.append(Change("move", path, f"{detail}; moved to {LOST_AND_FOUND}/{path}"))

    def set_aside(self, path: str, detail: str, rows: int | None) -> None:
        """Move a part the manifest listed: its battles, which the store counted, are set aside (``rows``: what
        the manifest says it holds, when its footer cannot tell)."""
        self.move(path, detail)
        if path.startswith("battles/"):
            try:
                self.battles_aside += footer(self.root / path)[0]
            except Exception:  # no footer to count from: what the manifest said, if anything
                self.battles_aside += rows or 0

    def manifest(self) -> dict[str, Any]:
        tables: dict[str, list[dict[str, Any]]] = {}
        for path, entry in self.kept.items():
            tables.setdefault(self.tables[path], []).append(entry)
        generation = max([self.generation, *(part_generation(p) or 0 for p in self.kept)])
        changes = [c.as_dict() for c in self.changes]
        return {"format": FORMAT, "version": FORMAT_VERSION, "generation": generation, "tables": tables,
                "ingests": [*self.log, {"action": "repair", "changes": changes}]}

    def repeats_battles(self, path: str) -> int:
        """How many battles of the part at ``path`` a kept battles part already holds."""
        import polars as pl

        if self.battle_ids is None:
            kept = [_battle_ids(self.files[p]) for p, t in self.tables.items() if t == "battles"]
            self.battle_ids = pl.concat(kept) if kept else pl.DataFrame(schema={"battle_id": pl.String})
        return _battle_ids(self.root / path).join(self.battle_ids, on="battle_id", how="semi").height

    def readable(self, table: str, path: str, rows: int | None) -> tuple[Problem | None, dict[str, Any] | None, int, dict[str, int]]:
        """The deep check of a part a repair may keep: its footer and every page of its data, as the commands
        that read it would. What is wrong (a ``row_count`` only is fixed), its schema (None: it cannot be kept),
        its rows and null counts."""
        problem, schema = check_part(self.root, table, path, rows, self.unions.get(table, {}))
        if schema is None or problem is not None and problem.kind != "row_count":
            return problem, None, 0, {}
        damaged, found, nulls = read_data(self.root, path)
        return (damaged, None, 0, {}) if damaged is not None else (problem, schema, found, nulls)

    def new_part(self, table: str) -> str:
        """A name for a part the repair writes, staged as a writer stages (a generation after every part on disk),
        so that until its manifest is published it is a leftover of a run that did not finish."""
        return f"{table}/part-{self.staging:06d}-{uuid.uuid4().hex[:8]}.parquet"

    def split_invalid(self, path: str) -> None:
        """A battles part kept as it is that holds battles with an invalid count (see :func:`_invalid`): they go to
        the quarantine, the other battles to a new part, and the part itself to lost+found."""
        import polars as pl

        source = self.root / path
        columns = _counts_of(source)
        if not columns:
            return
        invalid = _invalid(columns)
        bad = scan_parquet(source).filter(invalid).collect()
        if not bad.height:
            return
        good = self.kept.pop(path)["rows"] - bad.height
        nulls = scan_parquet(source).filter(~invalid).select(pl.all().null_count()).collect(engine="streaming")
        valid = self.new_part("battles") if good else None
        if valid is not None:
            self.kept[valid] = {"path": valid, "rows": good, "nulls": {c: n for c, n in zip(nulls.columns, nulls.row(0)) if n}}
            self.tables[valid] = "battles"
        quarantine = _quarantined(bad, columns)
        rejected = self.new_part("quarantine")
        self.kept[rejected] = {"path": rejected, "rows": quarantine.height,
                               "nulls": {c: n for c, n in zip(quarantine.columns, quarantine.null_count().row(0)) if n}}
        self.tables[rejected] = "quarantine"
        self.splits.append((path, valid, rejected, quarantine))
        self.moves.append(path)
        self.battles_quarantined += bad.height
        rest = f"its other {_plural(good, 'battle')} kept as {valid}" if valid else "it has no other battle"
        self.changes.append(Change("quarantine", path, f"{_plural(bad.height, 'battle')} with a count that is not a whole number from 0 to 2^53-1 "
                                                       f"(which every style fit refuses) moved to the quarantine as {rejected} (reason wrong_type, "
                                                       f"each battle whole in raw); {rest}; the part itself moved to {LOST_AND_FOUND}/{path}"))

    def missing(self, path: str, rows: int | None) -> None:
        """A listed part that is not on disk: its entry goes (a link to nothing goes to lost+found, or the next
        check finds it unlisted)."""
        lost = f"its {rows:,} rows are" if rows is not None else "its rows are"
        if (self.root / path).is_symlink():
            self.move(path, f"listed in {MANIFEST}, but a link to a file that is not there: {lost} not on disk")
        else:
            self.changes.append(Change("drop", path, f"listed in {MANIFEST} but missing: {lost} not on disk"))


def _battle_ids(file: Path) -> pl.DataFrame:
    import polars as pl

    return scan_parquet(file).select("battle_id").collect()


def _known(root: Path, manifest: dict[str, Any] | None, problems: list[Problem]) -> tuple[list[tuple[str, str, int | None, dict[str, int] | None]], list[str], int | None, list[Any]]:
    """The parts the manifest lists, as (table, path, rows, nulls) — salvaged, without counts, from a text that
    does not parse —, the files it lists under names that are not a part's, its generation when known, and its
    log."""
    if manifest is not None:
        return ([(e.table, e.path, e.rows, e.nulls) for e in entries(manifest)], misnamed(manifest), manifest["generation"],
                list(manifest.get("ingests", [])))
    if any(p.kind == "manifest_newer" for p in problems):
        raise InputError(f"store {root}: {problems[0].detail}; this version will not rewrite it")
    try:
        text = (root / MANIFEST).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    named = dict.fromkeys(match.group(1) for match in _LISTED_PATH.finditer(text))
    parts = [path for path in named if part_generation(path) is not None and TABLE_NAME.fullmatch(path.rsplit("/", 1)[0])]
    generation = _GENERATION.search(text)
    try:  # JSON of another shape may still hold the log
        log = json.loads(text).get("ingests")
    except (ValueError, AttributeError, RecursionError):
        log = None
    named_generation = int(generation.group(1)) if generation else None
    return ([(path.rsplit("/", 1)[0], path, None, None) for path in parts], [p for p in named if p not in parts and in_folder(table_of(p), p)],
            named_generation if is_count(named_generation) else None, log if isinstance(log, list) else [])


def _plan(root: Path, adopt_unpublished: bool) -> tuple[_Plan, bool]:
    """The repair of the store at ``root``, and whether its manifest must be rewritten."""
    if (root / MANIFEST).is_dir():  # it could not be replaced: say so before anything is moved
        raise InputError(f"store {root}: {MANIFEST} is a directory; move it out of the store, then repair")
    manifest, problems = read_manifest(root)
    files = sorted(part_files(root))
    if manifest is None and not any(part_generation(f) is not None for f in files):
        detail = f": {problems[0].detail}" if problems else ""
        raise InputError(f"no store at {root} to repair (no part files){detail}")
    known, renamed, generation, log = _known(root, manifest, problems)
    plan = _Plan(root, log)
    for bad in problems:
        if bad.kind in ("bad_entry", "duplicate_entry"):
            plan.changes.append(Change("drop", bad.path, bad.detail))
    for table, path, rows, nulls in known:
        if not (root / path).is_file():
            plan.missing(path, rows)
            continue
        problem, schema, found, counted = plan.readable(table, path, rows)
        if schema is None:
            plan.set_aside(path, f"listed, but {problem.detail if problem else path}", rows)
            continue
        plan.keep(table, path, found, counted, schema)
        if problem is not None:
            plan.changes.append(Change("fix", path, problem.detail))
        elif rows is None:
            plan.changes.append(Change("keep", path, f"named by the damaged {MANIFEST}; readable, {_plural(found, 'row')}"))
    published = [part_generation(p) or 0 for p in plan.kept]
    if generation is None and not published:  # nothing says what was published: the last generation may not have been
        generation, plan.guessed = max([0, *(part_generation(f) or 0 for f in files)]) - 1, True
    plan.generation = max([generation or 0, *published])
    plan.staging = max([plan.generation, *(part_generation(f) or 0 for f in files)]) + 1
    if manifest is not None and plan.generation > manifest["generation"]:
        plan.changes.append(Change("fix", MANIFEST, f"generation {manifest['generation']} raised to {plan.generation}, that of its parts"))
    for path in renamed:  # a part a user renamed: it gets a part's name of a published generation, as it was published
        table = table_of(path)
        if not (root / path).is_file():
            plan.missing(path, None)
            continue
        problem, schema, found, counted = plan.readable(table, path, None)
        repeated = plan.repeats_battles(path) if schema is not None and table == "battles" else 0
        if schema is None or repeated:
            why = problem.detail if problem else f"{repeated:,} of its battles are already stored"
            plan.set_aside(path, f"listed in {MANIFEST} under a name that is not a part's, and {why}", None)
            continue
        name = plan.new_part(table)
        plan.keep(table, name, found, counted, schema, file=path)
        plan.renames.append((path, name))
        plan.changes.append(Change("adopt", path, f"listed in {MANIFEST} under a name that is not a part's; a readable part of {table}, "
                                                  f"{_plural(found, 'row')}: renamed {name}"))
    plan.listed = listed = {path for _, path, _, _ in known} | set(renamed)
    for file in files:
        path = file.relative_to(root).as_posix()
        part, table = part_generation(path), file.parent.relative_to(root).as_posix()
        if path in listed or (part is None and not TEMPORARY_NAME.fullmatch(file.name)):
            continue  # kept, or not the store's: left alone
        if part is None:
            plan.move(path, "a temporary file of a write that did not finish")
        elif part > plan.generation and not adopt_unpublished:
            why = (f"generation {part} is the last on disk and no {MANIFEST} says it was published" if plan.guessed
                   else f"never published (generation {part}; {MANIFEST} reached {plan.generation})")
            plan.move(path, f"{why}: {_BRING_BACK.get(table.partition('/')[0], 'kept for reference')}")
        elif not TABLE_NAME.fullmatch(table):
            plan.move(path, f"{table}/ is not a table of the store")
        else:
            problem, schema, found, counted = plan.readable(table, path, None)
            repeated = plan.repeats_battles(path) if schema is not None and table == "battles" else 0
            if schema is None:
                plan.move(path, f"not listed, and {problem.detail if problem else path}")
            elif repeated:
                plan.move(path, f"not listed, and {repeated:,} of its battles are already stored")
            else:
                plan.keep(table, path, found, counted, schema)
                plan.changes.append(Change("adopt", path, f"not listed in {MANIFEST}; a readable part of {table}, generation {part}, {_plural(found, 'row')}"))
    for path in [p for p, table in plan.tables.items() if table == "battles" and p in plan.kept and plan.files[p] == root / p]:
        plan.split_invalid(path)
    rewrite = bool(plan.changes) or any(p.error for p in problems)
    if rewrite:
        why = next((p.detail for p in problems if p.kind.startswith("manifest_")), "rebuilt")
        plan.changes.append(Change("rewrite", MANIFEST, f"{why}: lists the {_plural(len(plan.kept), 'part')} kept (the old one is kept in {LOST_AND_FOUND}/)"))
    return plan, rewrite


def _link(source: Path, target: Path) -> None:
    """A second name for a part (a hard link; a copy where the file system has none): the first stays until the
    new manifest lists the second."""
    try:
        os.link(source, target)
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
            raise
        atomic_write(target, lambda tmp: shutil.copyfile(source, tmp))


def _apply(plan: _Plan) -> None:
    """Publish the repair in the order that keeps the store consistent whatever step fails: the old manifest is
    copied to lost+found; the parts the repair writes are staged as a writer stages them (renamed parts get their
    new name beside the old, a hard link; a part split for invalid counts, its two new parts); files no manifest
    lists are moved to lost+found; the new manifest is written atomically (the step that changes the store); then
    what the old one listed and the new one does not is moved. A failure undoes what was done (files moved back,
    the old manifest put back, the staged parts removed), so the store is as before; a repair killed outright
    leaves a store that a second repair finishes. Last, a renamed part's old name goes: its data has the new name
    (a copy's old name is moved aside instead)."""
    import polars as pl

    root = plan.root
    manifest = root / MANIFEST
    old = manifest.read_bytes() if manifest.exists() else None
    created: list[Path] = []
    moved: list[tuple[Path, Path]] = []

    def move(path: str) -> None:
        target = aside_path(root, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(root / path, target)
        moved.append((root / path, target))
        fsync_dir(target.parent)

    with writing(root):
        if old is not None:
            atomic_write_bytes(aside_path(root, MANIFEST), old)
        try:
            for source, name in plan.renames:
                created.append(root / name)
                _link(root / source, root / name)
            for source, valid, rejected, quarantine in plan.splits:
                if valid is not None:
                    created.append(root / valid)
                    battles = scan_parquet(root / source).filter(~_invalid(_counts_of(root / source)))
                    atomic_write(root / valid, lambda tmp: battles.collect().write_parquet(tmp, compression="zstd", statistics=True))
                created.append(root / rejected)
                atomic_write(root / rejected, lambda tmp: quarantine.write_parquet(tmp, compression="zstd", statistics=True))
            for path in [p for p in plan.moves if p not in plan.listed]:
                move(path)
            atomic_write_bytes(manifest, (json.dumps(plan.manifest(), indent=1) + "\n").encode())
            copies = [source for source, name in plan.renames if not os.path.samefile(root / source, root / name)]
            for path in [*(p for p in plan.moves if p in plan.listed), *copies]:
                move(path)
        except BaseException:
            _undo(manifest, old, moved, created)
            raise
        for source, name in plan.renames:
            with suppress(OSError):  # an old name left behind is a file that is not the store's: a note, nothing more
                if (root / source).exists() and os.path.samefile(root / source, root / name):
                    (root / source).unlink()


def _undo(manifest: Path, old: bytes | None, moved: list[tuple[Path, Path]], created: list[Path]) -> None:
    """Put the store back as it was before a repair that failed midway: the files moved back, the old manifest
    back (none, if it had none), the parts it staged gone. What cannot be undone (the disk failing still) is
    left to a second repair, which finishes the first."""
    try:
        for source, target in reversed(moved):
            os.replace(target, source)
        if old is None:
            manifest.unlink(missing_ok=True)
        elif manifest.read_bytes() != old:
            atomic_write_bytes(manifest, old)
        for path in created:
            path.unlink(missing_ok=True)
    except OSError:
        pass


def repair_store(store: Path, *, lock_wait: float = 60.0, dry_run: bool = False, adopt_unpublished: bool = False) -> StoreRepair:
    """Make the store at ``store`` consistent (see the module's docstring), under the writer lock; with
    ``dry_run``, only say what would be done."""
    root = _root(store)
    with nullcontext() if dry_run else Store(root, {}).lock(lock_wait):
        plan, rewrite = _plan(root, adopt_unpublished)
        if rewrite and not dry_run:
            _apply(plan)
    tables = _tables(plan.manifest() if rewrite else read_manifest(root)[0])
    settings = {"dry_run": dry_run, "adopt_unpublished": adopt_unpublished}
    return StoreRepair(root, tuple(plan.changes if rewrite else ()), tables, dry_run, plan.battles_aside if rewrite else 0,
                       plan.battles_quarantined if rewrite else 0, settings=settings, inputs={"files": [], "store": str(root)})
