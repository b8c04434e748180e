"""The store's manifest and the files beside it: what a consistent store looks like, and every way to tell a
damaged one, so that nothing is ever deleted or written because a manifest looks wrong.

A consistent store: ``manifest.json`` parses, has this tool's format and a version it reads, and lists each part
once, as ``<table>/part-<generation>-<8 hex>.parquet`` inside the store, with its row count; every listed part
exists and is parquet (cheap checks: a stat and the last four bytes), and — the deep checks, from the parquet
footers only — has the table's key columns, a schema that reads together with the other parts', and the rows the
manifest says. Every part file in a table folder is listed, except what a run that did not finish staged: a
part of the next generation (the manifest's + 1, which is what every writer stages) or an atomic-write
temporary; the next writer deletes those, and only those.

Why the generation tells staged from published: a writer stages its parts as generation g + 1 under the lock,
after deleting the leftovers of generation g + 1 of any earlier run, then publishes generation g + 1. So every
part of a generation <= g on disk was published, and a part of a later generation than g + 1 cannot come from
a run on this manifest (the manifest went back: a restored copy or an edit).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from arena_cli.errors import InputError
from arena_cli.io.files import scan_parquet

MANIFEST = "manifest.json"
FORMAT = "arena-store"
FORMAT_VERSION = 1
#: The top folders of the store's tables (``features/<key>`` tables live under ``features``).
TABLE_FOLDERS = ("battles", "quarantine", "features")
#: Where ``arena store repair`` moves what it does not keep, and a writer the parts it finds staged (neither deletes them).
LOST_AND_FOUND = "lost+found"


def aside_path(root: Path, path: str) -> Path:
    """Where ``path`` (relative to the store's ``root``) goes in lost+found: the same relative path, numbered if
    taken, so that nothing set aside earlier is overwritten."""
    target = root / LOST_AND_FOUND / path
    number = 0
    while os.path.lexists(target):
        number += 1
        target = root / LOST_AND_FOUND / f"{path}.{number}"
    return target

TABLE_NAME = re.compile(r"battles|quarantine|features/(?!\.\.?(?:/|$))[A-Za-z0-9_.+-]+")
PART_NAME = re.compile(r"part-(\d{6,})-[0-9a-f]{8}\.parquet")
#: :func:`arena_cli.io.atomic.atomic_write`'s temporary beside a part or the manifest: never published.
TEMPORARY_NAME = re.compile(r"\.(?:part-\d{6,}-[0-9a-f]{8}\.parquet|manifest\.json)\..+\.tmp")
PARQUET_MAGIC = b"PAR1"


#: Every kind of problem, the most telling first (a missing part says more than the row counts it throws off).
KINDS = (
    "manifest_newer", "manifest_missing", "manifest_unreadable", "manifest_format", "manifest_version", "manifest_invalid",
    "bad_entry", "misnamed_part", "missing_part", "unreadable_part", "unreadable_data", "wrong_schema", "duplicate_entry", "unlisted_part", "unpublished_part",
    "generation", "row_count", "invalid_count", "staged_leftover", "unknown_file",
)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a store (``error``), or worth knowing about it (a note: the store is consistent).

    ``kind`` is stable (JSON); ``path`` is relative to the store; ``detail`` is one line for people."""

    kind: str
    path: str
    detail: str
    error: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "detail": self.detail, "severity": "error" if self.error else "note"}


@dataclass(frozen=True)
class Entry:
    """A part the manifest lists: its table, its path relative to the store, its rows and null counts."""

    table: str
    path: str
    rows: int
    nulls: dict[str, int] | None


def empty_manifest() -> dict[str, Any]:
    return {"format": FORMAT, "version": FORMAT_VERSION, "generation": 0, "tables": {}, "ingests": []}


def part_generation(path: str | Path) -> int | None:
    """The generation in a part's file name, None for a name that is not a part's."""
    match = PART_NAME.fullmatch(PurePosixPath(path).name)
    return int(match.group(1)) if match else None


def by_importance(problems: Iterable[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: KINDS.index(p.kind))


def is_count(value: Any) -> bool:
    """A whole number a part's rows or a generation can be: parquet counts rows in 64-bit integers."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


# ------------------------------------------------------------------------------------- the manifest itself


def read_manifest(root: Path) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The store's manifest (None when it has none or it cannot be used) and what is wrong with it; a store
    without a manifest but with part files is damaged (its manifest was lost)."""
    path = root / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if any(part_generation(file) is not None for file in part_files(root)):
            return None, [Problem("manifest_missing", MANIFEST, f"{MANIFEST} is missing but the store has part files")]
        return None, []
    except PermissionError:
        raise not_permitted(path) from None
    except (OSError, UnicodeDecodeError) as error:
        return None, [Problem("manifest_unreadable", MANIFEST, f"{MANIFEST} cannot be read ({getattr(error, 'strerror', None) or error})")]
    return parse_manifest(text)


def parse_manifest(text: str) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The manifest in ``text`` (None when it cannot be used at all) and what is wrong with it."""
    try:
        manifest = json.loads(text)
    except ValueError as error:
        return None, [Problem("manifest_unreadable", MANIFEST, f"{MANIFEST} is not valid JSON ({error})")]
    except RecursionError:
        return None, [Problem("manifest_unreadable", MANIFEST, f"{MANIFEST} is not a manifest (JSON nested too deeply)")]
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        return None, [Problem("manifest_format", MANIFEST, f"{MANIFEST} is not an arena store manifest (format {found!r})")]
    version = manifest.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return None, [Problem("manifest_version", MANIFEST, f"{MANIFEST} has no valid format version ({version!r})")]
    if version > FORMAT_VERSION:
        return None, [Problem("manifest_newer", MANIFEST,
                              f"{MANIFEST} was written by a newer arena-cli (format version {version}; this one reads {FORMAT_VERSION})")]
    for key, valid, what in (("generation", is_count, "a count"), ("tables", lambda v: isinstance(v, dict), "an object"),
                             ("ingests", lambda v: isinstance(v, list), "a list")):
        if key not in manifest and key != "ingests":
            return None, [Problem("manifest_invalid", MANIFEST, f"{MANIFEST} has no {key!r}")]
        if key in manifest and not valid(manifest[key]):
            return None, [Problem("manifest_invalid", MANIFEST, f"{MANIFEST}: {key!r} is not {what} ({manifest[key]!r})")]
    return manifest, _entry_problems(manifest)


def in_folder(table: str, path: str) -> bool:
    """Whether ``path`` (relative to the store, as a manifest names it) is a file inside ``table``'s folder."""
    parts = PurePosixPath(path)
    return (not parts.is_absolute() and ".." not in parts.parts and "\\" not in path and parts.as_posix() == path
            and path.startswith(f"{table}/"))


def table_of(path: str) -> str:
    """The table whose folder holds ``path`` (``features/<key>`` for a features part)."""
    parts = path.split("/")
    return "/".join(parts[:2]) if parts[0] == "features" else parts[0]


def _entry_problem(table: str, index: int, entry: Any) -> Problem | None:
    """What is wrong with one entry of ``table`` (None: nothing)."""
    where = f"{MANIFEST} entry {index + 1} of {table!r}"
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        return Problem("bad_entry", MANIFEST, f"{where} has no path")
    path = PurePosixPath(entry["path"])
    if path.is_absolute() or ".." in path.parts or "\\" in entry["path"] or path.as_posix() != entry["path"]:
        return Problem("bad_entry", MANIFEST, f"{where}: {entry['path']!r} is outside the store")
    if path.parent.as_posix() != table or part_generation(entry["path"]) is None:
        if in_folder(table, entry["path"]):  # a part a user renamed (or moved into a subfolder), and listed so
            return Problem("misnamed_part", entry["path"], f"{where}: {entry['path']} is not named as a part is "
                                                           f"({table}/part-<generation>-<8 hex>.parquet)")
        return Problem("bad_entry", MANIFEST, f"{where}: {entry['path']!r} is not a part file of the table's folder {table}/")
    if not is_count(entry.get("rows")):
        return Problem("bad_entry", MANIFEST, f"{where}: rows {entry.get('rows')!r} is not a count")
    nulls = entry.get("nulls", {})
    if not isinstance(nulls, dict) or not all(isinstance(k, str) and is_count(v) for k, v in nulls.items()):
        return Problem("bad_entry", MANIFEST, f"{where}: nulls {nulls!r} is not a count per column")
    return None


def _entry_problems(manifest: dict[str, Any]) -> list[Problem]:
    problems = []
    seen: set[str] = set()
    for table, parts in manifest["tables"].items():
        if not TABLE_NAME.fullmatch(table) or not isinstance(parts, list):
            why = "which is not a table of a store" if not TABLE_NAME.fullmatch(table) else f"whose parts are not a list ({parts!r})"
            problems.append(Problem("bad_entry", MANIFEST, f"{MANIFEST} names table {table!r}, {why}"))
            continue
        for index, entry in enumerate(parts):
            problem = _entry_problem(table, index, entry)
            if problem is not None:
                problems.append(problem)
                continue
            path = entry["path"]
            if path in seen:
                problems.append(Problem("duplicate_entry", path, f"{path} is listed twice in {MANIFEST}"))
            elif (part_generation(path) or 0) > manifest["generation"]:
                problems.append(Problem("generation", path, f"{path} is newer than {MANIFEST} (generation {manifest['generation']})"))
            seen.add(path)
    return problems


def misnamed(manifest: dict[str, Any]) -> list[str]:
    """The paths the manifest lists in their table's folder under a name that is not a part's (a user renamed a
    part): not parts the store can read, yet files it must not lose."""
    return list(dict.fromkeys(p.path for p in _entry_problems(manifest) if p.kind == "misnamed_part"))


def entries(manifest: dict[str, Any]) -> list[Entry]:
    """The valid entries of a parsed manifest, each path once (what a repair can keep)."""
    found: dict[str, Entry] = {}
    for table, parts in manifest["tables"].items():
        if not TABLE_NAME.fullmatch(table) or not isinstance(parts, list):
            continue
        for index, entry in enumerate(parts):
            if _entry_problem(table, index, entry) is None and entry["path"] not in found:
                found[entry["path"]] = Entry(table, entry["path"], entry["rows"], entry.get("nulls"))
    return list(found.values())


# ---------------------------------------------------------------------------------------------- the parts


def part_files(root: Path) -> Iterator[Path]:
    """Every file under the store's table folders (parts, temporaries, anything else)."""
    for folder in TABLE_FOLDERS:
        base = root / folder
        if base.is_dir():
            yield from (p for p in base.rglob("*") if p.is_file() or p.is_symlink())
    yield from (p for p in root.glob(f".{MANIFEST}.*.tmp"))


def looks_like_parquet(path: Path) -> str | None:
    """The cheap check of a part (a stat and its last four bytes): None if it may be parquet, else why not."""
    try:
        size = path.stat().st_size
        if size == 0:
            return "it is empty (0 bytes)"
        with open(path, "rb") as handle:
            handle.seek(max(size - len(PARQUET_MAGIC), 0))
            tail = handle.read()
    except PermissionError:
        raise not_permitted(path) from None
    except OSError as error:
        return f"it cannot be read ({error.strerror or error})"
    return None if size >= 12 and tail == PARQUET_MAGIC else "it is truncated or not parquet (no parquet footer)"


def not_permitted(path: Path) -> InputError:
    """A part this user may not read is not damaged: no check reports it, so no repair sets it aside."""
    return InputError(f"cannot read {path}: permission denied (the store's files must be readable by the user running arena)")


@functools.lru_cache(maxsize=4096)
def _footer(path: str, size: int, mtime_ns: int, inode: int) -> tuple[int, dict[str, Any]]:
    """Rows and schema from a part's footer. Parts never change once written, so a process reads each once."""
    import polars as pl

    scan = scan_parquet(path)
    return scan.select(pl.len()).collect().item(), dict(scan.collect_schema())


def footer(path: Path) -> tuple[int, dict[str, Any]]:
    """A part's rows and schema, read from its footer only; OSError or polars' error when it cannot be."""
    stat = path.stat()
    return _footer(str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino)


def key_columns(table: str) -> dict[str, Any]:
    """The columns (and their types) every part of ``table`` has: what readers join and deduplicate on."""
    import polars as pl

    if table == "battles":
        return dict.fromkeys(("battle_id", "model_a", "model_b", "outcome", "content_hash"), pl.String())
    if table == "quarantine":
        return {"source_file": pl.String(), "source_row": pl.Int64(), "reason": pl.String(), "raw": pl.String()}
    return dict.fromkeys(("battle_id", "content_hash", "feature_source"), pl.String())


def schema_problem(table: str, schema: dict[str, Any], union: dict[str, Any]) -> str | None:
    """Why a part with ``schema`` cannot be a part of ``table`` whose other parts read as ``union``."""
    for name, dtype in key_columns(table).items():
        if name not in schema:
            return f"it has no column {name!r}"
        if schema[name] != dtype:
            return f"its column {name!r} is {schema[name]}, not {dtype}"
    missing = [name for name in family_columns(table) if name not in schema]
    if missing:  # (another family's part, put in this one's folder: its battles would read as having no features)
        return f"it has no column {missing[0]!r} of the table's features"
    try:
        union_with(union, schema)
    except Exception as error:  # polars has no one class for "no common type"
        return f"its columns do not read together with the other parts' ({first_line(error)})"
    return None


def family_columns(table: str) -> list[str]:
    """The feature columns every part of a family's table (``features/markdown-default-v1``) has; none for other
    tables (and for the one-table layout's, ``features/default-cl100k_base-v1``, whose parts hold every family)."""
    from arena_cli.features.registry import FAMILIES, feature_columns

    family = next((f for f in FAMILIES if table.startswith(f"features/{f.name}-")), None)
    return feature_columns(family.names) if family is not None else []


def union_with(union: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The schema a read of parts with ``union`` and ``schema`` gives (as :meth:`Store.scan` concatenates them:
    missing columns null, types widened); raises when some column has no common type."""
    import polars as pl

    if all(union.get(name, dtype) == dtype for name, dtype in schema.items()):  # the usual case, without polars
        return {**union, **schema}
    return dict(pl.concat([pl.DataFrame(schema=union), pl.DataFrame(schema=schema)], how="diagonal_relaxed").schema)


def first_line(error: BaseException) -> str:
    """polars' messages can run to several lines: the first says what went wrong."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def unreadable_data(path: str, error: BaseException) -> Problem:
    return Problem("unreadable_data", path, f"{path}: its data cannot be read ({first_line(error)})")


def read_data(root: Path, path: str) -> tuple[Problem | None, int, dict[str, int]]:
    """Every page of a part decoded, which is the only way to find damage inside its data (a flipped byte in a
    page: the footer reads, the rows do not): what is wrong, else its rows and its null count per column (the
    columns that have nulls), as the manifest keeps them. Streamed, so a part is never held whole."""
    import polars as pl

    file = root / path
    try:
        nulls = scan_parquet(file).select(pl.all().null_count()).collect(engine="streaming")
        rows = footer(file)[0]
    except PermissionError:
        raise not_permitted(file) from None
    except (OSError, pl.exceptions.PolarsError, pl.exceptions.PanicException) as error:
        return unreadable_data(path, error), 0, {}
    return None, rows, {c: n for c, n in zip(nulls.columns, nulls.row(0)) if n}


def check_part(root: Path, table: str, path: str, rows: int | None, union: dict[str, Any]) -> tuple[Problem | None, dict[str, Any] | None]:
    """The deep check of one part, from its footer (``rows``: what the manifest says, None for an unlisted
    part; ``union``: how the table's parts kept so far read): what is wrong, and its schema if readable."""
    import polars as pl

    file = root / path
    if (why := looks_like_parquet(file)) is not None:
        return Problem("unreadable_part", path, f"{path}: {why}"), None
    try:
        found, schema = footer(file)
    except PermissionError:
        raise not_permitted(file) from None
    except (OSError, pl.exceptions.PolarsError) as error:
        return Problem("unreadable_part", path, f"{path}: it is not readable parquet ({first_line(error)})"), None
    if (why := schema_problem(table, schema, union)) is not None:
        return Problem("wrong_schema", path, f"{path} cannot be a part of {table}: {why}"), schema
    if rows is not None and found != rows:
        return Problem("row_count", path, f"{path} has {found:,} rows; {MANIFEST} says {rows:,}"), schema
    return None, schema


def listed_problems(root: Path, manifest: dict[str, Any], deep: bool, data: bool = False) -> list[Problem]:
    """What is wrong with the parts the manifest lists. Cheap (every open): missing, or not parquet (a stat and
    four bytes each). ``deep`` (before every write, and ``arena store check``): also unreadable footers, wrong
    schemas and row counts other than the manifest's, from the footers only. ``data`` (``arena store check
    --deep``): also every part's data, read whole."""
    problems = []
    unions: dict[str, dict[str, Any]] = {}
    for entry in entries(manifest):
        file = root / entry.path
        if not file.is_file():
            problems.append(Problem("missing_part", entry.path, f"{entry.path} is listed in {MANIFEST} but missing"))
        elif not deep:
            if (why := looks_like_parquet(file)) is not None:
                problems.append(Problem("unreadable_part", entry.path, f"{entry.path}: {why}"))
        else:
            problem, schema = check_part(root, entry.table, entry.path, entry.rows, unions.get(entry.table, {}))
            if data and schema is not None and (damaged := read_data(root, entry.path)[0]) is not None:
                problem = damaged
            if problem is not None:
                problems.append(problem)
            elif schema is not None:
                unions[entry.table] = union_with(unions.get(entry.table, {}), schema)
    return problems


def layout_problems(root: Path, manifest: dict[str, Any], files: list[Path] | None = None) -> list[Problem]:
    """Files in the table folders that the manifest does not list: leftovers a writer may delete (notes),
    parts whose data readers would not see (errors), and unknown files (notes: left alone).

    ``files``: found before the manifest was read (a reader's walk), so a part published since is listed; a
    leftover deleted since (by a writer, before it published) is skipped."""
    listed = {entry.path for entry in entries(manifest)} | set(misnamed(manifest))
    generation = manifest["generation"]
    problems = []
    for file in (files if files is not None else list(part_files(root))):
        path = file.relative_to(root).as_posix()
        if path in listed or not os.path.lexists(file):
            continue
        part = part_generation(path)
        if TEMPORARY_NAME.fullmatch(file.name) or part == generation + 1:
            problems.append(Problem("staged_leftover", path, f"{path} was staged by a run that did not finish; the next write sets it aside in lost+found", error=False))
        elif part is None:
            problems.append(Problem("unknown_file", path, f"{path} is not a file of the store; left alone", error=False))
        elif part <= generation:
            problems.append(Problem("unlisted_part", path, f"{path} is not listed in {MANIFEST}, which has published its generation {part}"))
        else:
            problems.append(Problem("unpublished_part", path,
                                    f"{path} has generation {part}, later than {MANIFEST}'s next ({generation + 1}): the manifest went back"))
    return problems


def staged_leftovers(root: Path, manifest: dict[str, Any]) -> list[Path]:
    """What a run that did not finish left (its parts of the next generation, atomic-write temporaries): the only
    files a writer deletes, and only once the manifest was checked."""
    return [root / p.path for p in layout_problems(root, manifest) if p.kind == "staged_leftover"]
