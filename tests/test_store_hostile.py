"""A damaged store, every way we know: manifest edits of every kind, parts missing, extra, truncated, empty, of a
wrong schema, files that are not the store's. For each, every command that may touch the store (ingest,
features, info, fit, export) ends without a traceback, with the documented exit code and a one-line message
naming the problem, and leaves every data file byte-identical (never fewer); `arena store check` names the
problem and `arena store repair` makes the store consistent while deleting nothing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.features.cache import update_store_features
from arena_cli.io.index import FOLDER as INDEX
from arena_cli.io.ingest import ingest_to_store
from arena_cli.io.manifest import LOST_AND_FOUND, PART_NAME
from arena_cli.io.repair import check_store, repair_store
from arena_cli.io.store import MANIFEST, Store

runner = CliRunner()


def arena(*args):
    return runner.invoke(app, [str(a) for a in args])


def vote(i: int) -> dict:
    return {"question_id": f"q{i}", "model_a": f"m{i % 4}", "model_b": f"m{(i + 1 + i // 8 % 3) % 4}", "winner": ["model_a", "model_b", "tie"][i % 3], "score": i,
            "conversation_a": [{"role": "user", "content": "?"}, {"role": "assistant", "content": f"# A {i}\n- x " * (1 + i % 3)}],
            "conversation_b": [{"role": "user", "content": "?"}, {"role": "assistant", "content": "**b** " * (1 + i % 2)}]}


def write_votes(path: Path, votes: list) -> Path:
    path.write_text("".join((v if isinstance(v, str) else json.dumps(v)) + "\n" for v in votes))
    return path


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A store of generation 3: two battles parts, a quarantine part, the default features (three tables)."""
    work = tmp_path_factory.mktemp("base")
    store = Store.open(work / "store", create=True)
    ingest_to_store(store, [write_votes(work / "a.jsonl", [vote(i) for i in range(24)] + ["{junk"])])
    ingest_to_store(store, [write_votes(work / "b.jsonl", [vote(i) for i in range(24, 36)])])
    update_store_features(store, "default")
    return store.root


@pytest.fixture
def store(base, tmp_path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(base, root)
    return root


# ------------------------------------------------------------------------------------------------ damage


def manifest(root: Path) -> dict:
    return json.loads((root / MANIFEST).read_text())


def next_generation(root: Path) -> str:
    """The generation a writer of the store stages its parts as, as part names spell it."""
    return f"{manifest(root)['generation'] + 1:06d}"


def edit(change: Callable[[dict], object]) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        edited = manifest(root)
        change(edited)
        (root / MANIFEST).write_text(json.dumps(edited, indent=1))

    return damage


def part(root: Path, table: str = "battles", index: int = 0) -> Path:
    return root / manifest(root)["tables"][table][index]["path"]


def first_path(m: dict, table: str = "battles", index: int = 0) -> str:
    return m["tables"][table][index]["path"]


def rename_listed(m: dict) -> None:  # the user's `sed -i 's/part-000001/part-999999/' manifest.json`
    entry = m["tables"]["battles"][0]
    entry["path"] = entry["path"].replace("part-000001", "part-999999")


def truncate(root: Path) -> None:
    data = part(root).read_bytes()
    part(root).write_bytes(data[: len(data) // 2])


def wrong_schema(root: Path) -> None:
    """The first battles part replaced by a parquet of the same rows without battle_id."""
    path = part(root)
    frame = pl.read_parquet(path).drop("battle_id")
    path.unlink()
    frame.write_parquet(path)


def unreadable_together(root: Path) -> None:
    """The extra column `score` (text, as JSON extras are stored) made integers in the first battles part and
    lists in the second: no type holds both."""
    for index, score in ((0, pl.col("score").cast(pl.Int64)), (1, pl.concat_list(pl.col("score").cast(pl.Int64)))):
        path = part(root, index=index)
        frame = pl.read_parquet(path).with_columns(score.alias("score"))
        path.unlink()
        frame.write_parquet(path)


def flip_data(path: Path, stride: int = 16) -> None:
    """Flip one byte in every ``stride`` of a part's pages, its footer left whole (the 4 bytes before the closing
    magic say its length): the footer checks pass, the data does not decode."""
    data = bytearray(path.read_bytes())
    pages_end = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    for offset in range(4 + stride // 2, pages_end, stride):
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def rename_part(name: str, table: str = "battles") -> Callable[[Path], None]:
    """The first part of ``table`` renamed to ``name`` (in its folder), and listed so: what a user's ``mv`` and
    edit of the manifest give."""

    def damage(root: Path) -> None:
        edited = manifest(root)
        target = root / table / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (root / first_path(edited, table)).rename(target)
        edited["tables"][table][0]["path"] = f"{table}/{name}"
        (root / MANIFEST).write_text(json.dumps(edited, indent=1))

    return damage


def copy_as(name: str, table: str = "battles") -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        shutil.copy(part(root, table), root / table / name)

    return damage


def write_file(relative: str, data: bytes) -> Callable[[Path], None]:
    def damage(root: Path) -> None:
        (root / relative).write_bytes(data)

    return damage


def unlist_first(m: dict) -> None:
    m["tables"]["battles"].pop(0)


def duplicate_first(m: dict) -> None:
    m["tables"]["battles"].append(dict(m["tables"]["battles"][0]))


def set_entry(key: str, value: object, table: str = "battles") -> Callable[[dict], None]:
    def change(m: dict) -> None:
        m["tables"][table][0][key] = value

    return change


def move_to_quarantine_folder(m: dict) -> None:
    m["tables"]["quarantine"][0]["path"] = first_path(m)


@dataclass(frozen=True)
class Case:
    name: str
    damage: Callable[[Path], None]
    kind: str                 # what `arena store check` reports
    says: str                 # what the one-line error names
    codes: dict[str, int] = field(default_factory=dict)  # exit codes other than 3, per command


READS_WORK = {"info": 0, "fit": 0, "export": 0}
ALL_WORK = {"ingest": 0, "features": 0, **READS_WORK}

CASES = [
    Case("unparseable manifest", lambda r: (r / MANIFEST).write_text((r / MANIFEST).read_text()[:150]), "manifest_unreadable", "manifest.json is not valid JSON"),
    Case("empty manifest", write_file(MANIFEST, b""), "manifest_unreadable", "manifest.json is not valid JSON"),
    Case("manifest not an object", write_file(MANIFEST, b"[1, 2]"), "manifest_format", "not an arena store manifest"),
    Case("another format", edit(lambda m: m.update(format="other-tool")), "manifest_format", "format 'other-tool'"),
    Case("newer version", edit(lambda m: m.update(version=2)), "manifest_newer", "written by a newer arena-cli"),
    Case("version not a number", edit(lambda m: m.update(version="1")), "manifest_version", "no valid format version"),
    Case("no tables", edit(lambda m: m.pop("tables")), "manifest_invalid", "has no 'tables'"),
    Case("no generation", edit(lambda m: m.pop("generation")), "manifest_invalid", "has no 'generation'"),
    Case("tables not an object", edit(lambda m: m.update(tables=[])), "manifest_invalid", "'tables' is not an object"),
    Case("ingest log not a list", edit(lambda m: m.update(ingests={})), "manifest_invalid", "'ingests' is not a list"),
    Case("manifest deleted", lambda r: (r / MANIFEST).unlink(), "manifest_missing", "manifest.json is missing"),
    Case("listed part renamed", edit(rename_listed), "missing_part", "part-999999"),
    Case("listed part deleted", lambda r: part(r).unlink(), "missing_part", "is listed in manifest.json but missing"),
    Case("listed part a link to nothing", lambda r: (part(r).unlink(), part(r).symlink_to(r / "gone.parquet")), "missing_part",
         "is listed in manifest.json but missing"),
    Case("features part deleted", lambda r: part(r, "features/tokens-cl100k_base-v1").unlink(), "missing_part", "features/tokens-cl100k_base-v1/part-"),
    Case("part listed twice", edit(duplicate_first), "duplicate_entry", "is listed twice"),
    Case("wrong row count", edit(set_entry("rows", 5)), "row_count", "rows; manifest.json says 5",
         {**READS_WORK}),
    Case("path escaping the store", edit(set_entry("path", "../outside/part-000001-00000000.parquet")), "bad_entry", "outside the store"),
    Case("absolute path", edit(set_entry("path", "/etc/part-000001-00000000.parquet")), "bad_entry", "outside the store"),
    Case("path in another table's folder", edit(move_to_quarantine_folder), "bad_entry", "not a part file of the table's folder quarantine/"),
    Case("rows not a count", edit(set_entry("rows", "many")), "bad_entry", "is not a count"),
    Case("rows beyond 64 bits", edit(set_entry("rows", 10**30)), "bad_entry", "rows 1000000000000000000000000000000 is not a count"),
    Case("generation beyond 64 bits", edit(lambda m: m.update(generation=10**20)), "manifest_invalid", "'generation' is not a count"),
    Case("manifest nested too deeply", write_file(MANIFEST, b"[" * 100_000 + b"]" * 100_000), "manifest_unreadable", "JSON nested too deeply"),
    Case("unknown table", edit(lambda m: m["tables"].update({"../x": []})), "bad_entry", "not a table of a store"),
    Case("a table's parts not a list", edit(lambda m: m["tables"].update(battles={})), "bad_entry", "names table 'battles', whose parts are not a list"),
    Case("generation lowered", edit(lambda m: m.update(generation=1)), "generation", "newer than manifest.json (generation 1)"),
    Case("entry dropped from the manifest", edit(unlist_first), "unlisted_part", "is not listed in manifest.json"),
    Case("a copy of a part under a published name", copy_as("part-000001-ffffffff.parquet"), "unlisted_part", "part-000001-ffffffff.parquet"),
    Case("a part of a later generation", copy_as("part-000009-ffffffff.parquet"), "unpublished_part", "the manifest went back"),
    Case("garbage named like a published part", write_file("battles/part-000002-0000beef.parquet", b"not parquet"), "unlisted_part", "part-000002-0000beef"),
    Case("listed part renamed to another name", rename_part("part-1.parquet"), "misnamed_part", "battles/part-1.parquet is not named as a part is"),
    Case("listed part moved into a subfolder", rename_part("old/part-000001-0000beef.parquet"), "misnamed_part", "battles/old/part-000001-0000beef.parquet"),
    Case("truncated part", truncate, "unreadable_part", "truncated or not parquet"),
    Case("zero-byte part", lambda r: part(r).write_bytes(b""), "unreadable_part", "it is empty (0 bytes)"),
    Case("quarantine part truncated", lambda r: part(r, "quarantine").write_bytes(b"PAR1"), "unreadable_part", "quarantine/part-"),
    Case("part without battle_id", wrong_schema, "wrong_schema", "has no column 'battle_id'"),
    Case("parts that do not read together", unreadable_together, "wrong_schema", "do not read together"),
]
NOTES = [
    Case("a text file in battles/", write_file("battles/notes.txt", b"mine"), "unknown_file", "", ALL_WORK),
    Case("a parquet file of another name", copy_as("backup.parquet"), "unknown_file", "", ALL_WORK),
]


def data_files(root: Path) -> dict[str, str]:
    """Every file of the store but its lock, by path, with a digest of its bytes."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"}


def commands(root: Path, work: Path) -> dict[str, list]:
    more = write_votes(work / "more.jsonl", [vote(i) for i in range(100, 104)])
    return {
        "info": ["info", "-s", root],
        "fit": ["fit", "-s", root, "--style", "length", "--ci", "none", "--min-battles", "1"],
        "export": ["export", "-s", root, "-o", work / "out.parquet"],
        "features": ["features", "-s", root, "--recipe", "lmarena"],
        "ingest": ["ingest", more, "--store", root],
    }


@pytest.mark.parametrize("case", CASES + NOTES, ids=lambda c: c.name)
def test_every_command_on_a_damaged_store(case, store, tmp_path):
    case.damage(store)
    for name, args in commands(store, tmp_path).items():
        before = data_files(store)
        result = arena(*args)
        expected = case.codes.get(name, 3)
        assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit), result.output
        assert result.exit_code == expected, f"{name}: {result.output}"
        after = data_files(store)
        if expected == 3:
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: ") and case.says in lines[0], f"{name}: {result.stderr}"
            if case.kind != "manifest_newer":
                assert "arena store repair --store" in lines[0]
            assert after == before, name
        else:  # a write may add files and publish a manifest (and its duplicate index); no other file changes or goes
            kept = {p: d for p, d in before.items() if p != MANIFEST and not p.startswith(f"{INDEX}/")}
            assert {p: d for p, d in after.items() if p in kept} == kept, name


@pytest.mark.parametrize("case", CASES + NOTES, ids=lambda c: c.name)
def test_check_names_the_problem_and_repair_fixes_it_deleting_nothing(case, store):
    case.damage(store)
    damaged = data_files(store)
    readable = _readable_battles(store)
    check = arena("store", "check", "-s", store, "-f", "json")
    assert "Traceback" not in check.output
    problems = json.loads(check.stdout)["tables"]["problems"]
    assert case.kind in {p["kind"] for p in problems}, problems
    assert check.exit_code == (0 if case in NOTES else 3)
    if case.kind == "manifest_newer":
        assert "upgrade arena-cli" in check.stderr and "fixes it" not in check.stderr
    repair = arena("store", "repair", "-s", store, "-f", "json")
    if case.kind == "manifest_newer":  # not this version's to rewrite
        assert repair.exit_code == 3 and "newer arena-cli" in repair.stderr and data_files(store) == damaged
        return
    assert repair.exit_code == 0, repair.output
    after = data_files(store)
    renamed = {c["path"] for c in json.loads(repair.stdout)["tables"]["changes"] if c["action"] == "adopt" and "renamed" in c["detail"]}
    for path, digest in damaged.items():  # each file kept, moved aside or given a part's name, with its bytes
        assert digest in (after.get(path), after.get(f"{LOST_AND_FOUND}/{path}")) or path in renamed and digest in after.values(), path
    assert arena("store", "check", "-s", store).exit_code == 0
    again = arena("store", "repair", "-s", store)
    assert again.exit_code == 0 and "nothing to repair" in again.stderr and data_files(store) == after
    # the battles of every readable part are back, once each (lost+found's by a plain ingest)
    for aside in sorted((store / LOST_AND_FOUND / "battles").glob("part-*.parquet")) if (store / LOST_AND_FOUND / "battles").is_dir() else []:
        if aside.name in readable:
            assert arena("ingest", aside, "--store", store).exit_code == 0
    ids = Store.open(store).read("battles", ["battle_id"])["battle_id"]
    assert ids.is_unique().all()
    assert set(ids) == set().union(*readable.values())
    assert arena("info", "-s", store).exit_code == 0


def test_a_published_part_whose_manifest_went_back_is_set_aside_not_deleted(tmp_path):
    """A manifest restored from a backup (its generation lower, its last part's entry gone) makes that part look
    like one a killed run staged for the next generation: the next ingest moves it to lost+found, bytes and all,
    and ingesting it from there brings its battles back."""
    root = tmp_path / "store"
    assert arena("ingest", write_votes(tmp_path / "a.jsonl", [vote(i) for i in range(10)]), "--store", root).exit_code == 0
    published = part(root)
    digest = hashlib.sha256(published.read_bytes()).hexdigest()
    edit(lambda m: (m.update(generation=0), m["tables"]["battles"].pop()))(root)
    assert arena("ingest", write_votes(tmp_path / "b.jsonl", [vote(i) for i in range(10, 14)]), "--store", root).exit_code == 0
    aside = root / LOST_AND_FOUND / published.relative_to(root)
    assert hashlib.sha256(aside.read_bytes()).hexdigest() == digest
    assert arena("ingest", aside, "--store", root).exit_code == 0
    ids = Store.open(root).read("battles", ["battle_id"])["battle_id"]
    assert ids.len() == 14 and ids.is_unique().all()


def _readable_battles(root: Path) -> dict[str, set[str]]:
    """The battle ids of every battles part file that polars can read with its ids, by file name."""
    found = {}
    for path in sorted((root / "battles").rglob("*.parquet")):
        try:
            found[path.name] = set(pl.read_parquet(path, columns=["battle_id"])["battle_id"])
        except Exception:
            continue
    return found


# ------------------------------------------------------------------------------------ file-system errors


def test_a_manifest_that_is_a_directory_is_not_repaired_by_moving_parts(store):
    """The repair could not replace it: it says so before moving anything to lost+found."""
    (store / MANIFEST).unlink()
    (store / MANIFEST).mkdir()
    before = data_files(store)
    result = arena("store", "repair", "-s", store)
    assert result.exit_code == 3 and "manifest.json is a directory" in result.stderr, result.output
    assert data_files(store) == before and not (store / LOST_AND_FOUND).exists()


def test_a_store_that_is_a_file_is_an_input_error(tmp_path):
    path = tmp_path / "store"
    path.write_text("not a folder")
    more = write_votes(tmp_path / "more.jsonl", [vote(1)])
    for args in (["ingest", more, "--store", path], ["info", "-s", path], ["store", "check", "-s", path], ["store", "repair", "-s", path]):
        result = arena(*args)
        assert result.exit_code == 3 and f"store {path} is a file, not a store directory" in " ".join(result.stderr.split()), result.output
    assert path.read_text() == "not a folder"


def deny(monkeypatch, name: str) -> None:
    """Opening the store's file ``name`` fails as on a read-only store (root ignores file modes: simulated)."""
    import builtins
    import errno

    real = builtins.open

    def guarded_open(file, *args, **kwargs):
        if Path(str(file)).name == name:
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)


def test_a_read_only_store_is_read_and_not_written(store, tmp_path, monkeypatch):
    before = data_files(store)
    deny(monkeypatch, ".lock")
    work = commands(store, tmp_path)
    for name in ("info", "fit", "export"):
        assert arena(*work[name]).exit_code == 0, name
    for name in ("ingest", "features"):
        result = arena(*work[name])
        assert result.exit_code == 3, result.output
        assert f"cannot write to store {store}: permission denied ({store / '.lock'})" in " ".join(result.stderr.split())
    assert arena("store", "repair", "-s", store).exit_code == 3
    assert data_files(store) == before


@pytest.mark.parametrize("unreadable", ["a part", MANIFEST])
def test_a_store_file_this_user_may_not_read_is_not_damage(store, tmp_path, monkeypatch, unreadable):
    """Permission denied is said as such, by every command; a repair sets nothing aside, as nothing is damaged
    (it used to move such a part, or with an unreadable manifest the last generation's parts, to lost+found)."""
    import builtins
    import errno

    before = data_files(store)
    name = part(store).name if unreadable == "a part" else MANIFEST
    real_open, real_read_text = builtins.open, Path.read_text

    def refused(file) -> bool:
        return Path(str(file)).name == name

    def guarded_open(file, *args, **kwargs):
        if refused(file):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(file))
        return real_open(file, *args, **kwargs)

    def guarded_read_text(self, *args, **kwargs):
        if refused(self):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real_read_text(self, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(Path, "read_text", guarded_read_text)
    for args in (commands(store, tmp_path)["info"], commands(store, tmp_path)["ingest"], ["store", "check", "-s", store],
                 ["store", "repair", "-s", store]):
        result = arena(*args)
        assert result.exit_code == 3, result.output
        assert f"cannot read {store}/" in result.stderr and "permission denied" in result.stderr and "damaged" not in result.stderr
    monkeypatch.undo()
    assert data_files(store) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_store_made_read_only_by_its_modes(store, tmp_path):
    before = data_files(store)
    for path in [store, *store.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        work = commands(store, tmp_path)
        assert arena(*work["info"]).exit_code == 0
        result = arena(*work["ingest"])
        assert result.exit_code == 3 and "cannot write to store" in result.stderr
    finally:
        for path in [store, *store.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert data_files(store) == before


def enospc(*args, **kwargs):
    import errno

    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def polars_enospc(*args, **kwargs):
    raise pl.exceptions.ComputeError("parquet: File out of specification: underlying IO error: No space left on device (os error 28)")


def polars_footer_enospc(*args, **kwargs):
    """What polars' parquet writer raises when the disk fills up as it writes the footer: no OS error number."""
    raise pl.exceptions.ComputeError("parquet: File out of specification: Invalid thrift: transport error")


@pytest.mark.parametrize(("writer", "reason"), [(enospc, "no space left on device"), (polars_enospc, "no space left on device"),
                                                (polars_footer_enospc, "the parquet file could not be written out (is the disk full?)")],
                         ids=["OSError", "polars", "polars footer"])
def test_a_full_disk_leaves_the_store_as_it_was(store, tmp_path, monkeypatch, writer, reason):
    before = data_files(store)
    monkeypatch.setattr(pl.DataFrame, "write_parquet", writer)
    result = arena(*commands(store, tmp_path)["ingest"])
    assert result.exit_code == 3, result.output
    message = " ".join(result.stderr.split())
    assert message.startswith(f"error: cannot write to store {store}: {reason} ({store / 'battles'}/part-{next_generation(store)}-")
    assert data_files(store) == before  # no staged part, no temporary, the manifest untouched


def test_a_full_disk_when_publishing_removes_the_staged_parts(store, tmp_path, monkeypatch):
    import arena_cli.io.store as store_module

    before = data_files(store)
    monkeypatch.setattr(store_module, "atomic_write_bytes", enospc)
    result = arena(*commands(store, tmp_path)["ingest"])
    assert result.exit_code == 3 and "no space left on device" in result.stderr and f"{store / MANIFEST}" in " ".join(result.stderr.split())
    assert data_files(store) == before


def test_a_publish_that_fails_after_its_rename_keeps_what_it_published(store, tmp_path, monkeypatch):
    """The manifest was replaced, then the directory's fsync failed: the new parts are listed, so they stay."""
    import errno

    import arena_cli.io.store as store_module

    real = store_module.atomic_write_bytes

    def write_then_fail(path, data):
        real(path, data)
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(store_module, "atomic_write_bytes", write_then_fail)
    result = arena(*commands(store, tmp_path)["ingest"])
    assert result.exit_code == 3 and "input/output error" in result.stderr
    monkeypatch.undo()
    assert arena("store", "check", "-s", store).exit_code == 0
    assert Store.open(store).rows("battles") == 36 + 4


def test_a_failed_first_ingest_leaves_no_store_behind(tmp_path, monkeypatch):
    rejected = write_votes(tmp_path / "bad.jsonl", [vote(1), {**vote(2), "model_b": "m2", "model_a": "m2"}])
    new = tmp_path / "deep" / "new-store"
    result = arena("ingest", rejected, "--store", new, "--strict", "--format", "json")
    assert result.exit_code == 4 and json.loads(result.stdout)["tables"]["sources"][0]["stored"] == 0
    assert "--strict: 1 row(s) rejected (self_battle: 1); the store is unchanged" in " ".join(result.stderr.split())
    assert not new.exists() and new.parent.is_dir()
    monkeypatch.setattr(pl.DataFrame, "write_parquet", enospc)
    assert arena("ingest", write_votes(tmp_path / "good.jsonl", [vote(3)]), "--store", new).exit_code == 3
    assert not new.exists()
    monkeypatch.undo()
    existing = tmp_path / "empty-folder"
    existing.mkdir()
    assert arena("ingest", rejected, "--store", existing, "--strict").exit_code == 4
    assert sorted(p.name for p in existing.iterdir()) == [".lock"]  # a folder it did not make stays, without a store
    assert arena("ingest", rejected, "--store", new).exit_code == 0 and (new / MANIFEST).exists()


def test_a_killed_runs_leftovers_are_notes_and_the_next_write_removes_them(store, tmp_path):
    leftover = store / "battles" / f"part-{next_generation(store)}-0000abcd.parquet"
    temporary = store / "quarantine" / f".part-{next_generation(store)}-0000abcd.parquet.k2j3h4.tmp"
    shutil.copy(part(store), leftover)
    temporary.write_bytes(b"half")
    check = arena("store", "check", "-s", store, "-f", "json")
    assert check.exit_code == 0
    assert {(p["kind"], p["severity"]) for p in json.loads(check.stdout)["tables"]["problems"]} == {("staged_leftover", "note")}
    before = data_files(store)
    work = commands(store, tmp_path)
    assert arena(*work["info"]).exit_code == 0 and data_files(store) == before  # readers leave them
    assert arena(*work["ingest"]).exit_code == 0
    assert not leftover.exists() and not temporary.exists()
    assert arena("store", "check", "-s", store).exit_code == 0


def test_a_killed_runs_part_is_adopted_only_when_asked(store):
    """A part of the next generation holding new battles (a run killed before it published): a repair moves it
    aside; --adopt-unpublished adopts it, or moves it aside when it repeats stored battles."""
    generation = next_generation(store)
    staged = store / "battles" / f"part-{generation}-0000abcd.parquet"
    frame = pl.read_parquet(part(store)).with_columns(pl.format("new-{}", "battle_id").alias("battle_id"))
    frame.write_parquet(staged)
    shutil.copy(part(store), store / "battles" / f"part-{generation}-0000dcba.parquet")  # repeats stored battles
    (store / MANIFEST).write_text((store / MANIFEST).read_text()[:120])  # and the manifest damaged
    dry = arena("store", "repair", "-s", store, "--dry-run", "-f", "json")
    actions = {c["path"]: c["action"] for c in json.loads(dry.stdout)["tables"]["changes"]}
    assert actions[f"battles/part-{generation}-0000abcd.parquet"] == actions[f"battles/part-{generation}-0000dcba.parquet"] == "move"
    assert staged.exists()  # a dry run changes nothing
    adopted = arena("store", "repair", "-s", store, "--adopt-unpublished", "-f", "json")
    actions = {c["path"]: c["action"] for c in json.loads(adopted.stdout)["tables"]["changes"]}
    assert actions[f"battles/part-{generation}-0000abcd.parquet"] == "adopt" and actions[f"battles/part-{generation}-0000dcba.parquet"] == "move"
    ids = Store.open(store).read("battles", ["battle_id"])["battle_id"]
    assert ids.is_unique().all() and ids.len() == 36 + frame.height
    assert (store / LOST_AND_FOUND / "battles" / f"part-{generation}-0000dcba.parquet").exists()


# ------------------------------------------------------------------------------------ damage inside the data


def readers(root: Path, work: Path) -> dict[str, list]:
    """Every command that reads the store, as it would read it (features cached, a style fit uses them)."""
    few = ["--min-battles", "1"]
    return {
        **commands(root, work),
        "fit": ["fit", "-s", root, "--style", "both", "--ci", "none", *few],
        "diff": ["diff", "-s", root, "--rounds", "2", *few],
        "matrix": ["matrix", "-s", root, *few],
        "report": ["report", "-s", root, "-o", work / "report.html", "--rounds", "2", *few],
        "judges": ["judges", "-s", root, *few],
        "compare": ["compare", root, root, *few],
        "export quarantine": ["export", "-s", root, "--table", "quarantine", "-o", work / "rejected.csv"],
        "features -o": ["features", "-s", root, "-o", work / "features.csv"],
    }


#: Per damaged table, the readers that read it.
READ_BY = {
    "battles": {"info", "fit", "export", "features", "ingest", "diff", "matrix", "report", "judges", "compare", "features -o"},
    "quarantine": {"info", "report", "export quarantine"},  # (an ingest reads it only for rows it rejects itself)
    "features/tokens-cl100k_base-v1": {"info", "fit", "diff", "report", "features", "features -o"},
}


@pytest.mark.parametrize("table", sorted(READ_BY))
def test_damage_inside_a_parts_data_is_said_and_repair_sets_the_part_aside(store, tmp_path, table):
    """Flipped bytes in a part's pages: its footer reads, so opening the store finds nothing; whatever command then
    reads the part exits 3 with one line naming it and `store check --deep` (never a polars error, exit 1);
    `store check --deep` reports it, `store repair` moves it to lost+found, and every command works again."""
    damaged = part(store, table)
    relative = damaged.relative_to(store).as_posix()
    rows = pl.scan_parquet(damaged).select(pl.len()).collect().item()
    flip_data(damaged)
    assert arena("store", "check", "-s", store).exit_code == 0  # footers (and the counts, here all null) only
    before = data_files(store)
    work = readers(store, tmp_path)
    for name in sorted(READ_BY[table]):
        if name == "ingest":  # an ingest reads the stored battles only to build its duplicate index, if it has none
            shutil.rmtree(store / "index", ignore_errors=True)
            before = data_files(store)
        result = arena(*work[name])
        assert result.exception is None or isinstance(result.exception, SystemExit), f"{name}: {result.output}"
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 3 and len(lines) == 1, f"{name}: {result.output}"
        assert f"{relative}: its data cannot be read (" in lines[0] and f"`arena store check --deep --store {store}`" in lines[0], name
        assert data_files(store) == before, name
    deep = arena("store", "check", "-s", store, "--deep", "-f", "json")
    assert deep.exit_code == 3 and "arena store repair --store" in deep.stderr
    assert [(p["kind"], p["path"]) for p in json.loads(deep.stdout)["tables"]["problems"]] == [("unreadable_data", relative)]
    repair = arena("store", "repair", "-s", store, "-f", "json")
    assert repair.exit_code == 0, repair.output
    aside = rows if table == "battles" else 0
    assert json.loads(repair.stdout)["meta"]["battles_set_aside"] == aside
    assert (f"({aside} battles set aside)" in repair.stderr) == bool(aside)
    assert data_files(store)[f"{LOST_AND_FOUND}/{relative}"] == before[relative]
    assert arena("store", "check", "-s", store, "--deep").exit_code == 0
    assert Store.open(store).rows("battles") == 36 - aside
    for name in ("info", "fit", "export"):  # the rest of the store is read as before
        assert arena(*work[name]).exit_code == 0, name


# ---------------------------------------------------------------------------------- parts under other names


#: Names a user may give a part: anything a file in the table's folder can be called but a part's own name.
other_names = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_characters="/\\\x00"), min_size=1, max_size=24),
    st.builds(lambda stem, suffix: stem + suffix, st.from_regex(r"part-[0-9]{1,8}(-[0-9a-fA-F]{0,9})?", fullmatch=True),
              st.sampled_from([".parquet", ".PARQUET", ".parquet.bak", "", ".tmp"])),
    st.builds(lambda folder, name: f"{folder}/{name}", st.sampled_from(["old", "2024", "a b"]),
              st.sampled_from(["part-000001-0000beef.parquet", "x.parquet"])),
).filter(lambda name: name not in (".", "..") and PurePosixPath(name).as_posix() == name and not PART_NAME.fullmatch(name)
         and ".." not in PurePosixPath(name).parts and len(name.encode()) < 200)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=other_names)
@example(name="[").via("a glob character: polars took the name as a pattern")
def test_a_listed_part_under_any_other_name_keeps_its_battles(base, tmp_path_factory, name):
    """A part a user renamed (and listed so) is damage every command names; repair gives it back a part's name,
    so that not one of its battles stops being counted, and deletes nothing."""
    root = tmp_path_factory.mktemp("renamed") / "store"
    shutil.copytree(base, root)
    digest = hashlib.sha256(part(root).read_bytes()).hexdigest()
    rename_part(name)(root)
    before = set(data_files(root).values())
    assert [(p.kind, p.path) for p in check_store(root).problems if p.error] == [("misnamed_part", f"battles/{name}")]
    repair = repair_store(root)
    adopted = [c for c in repair.changes if c.action == "adopt"]
    assert [c.path for c in adopted] == [f"battles/{name}"] and "renamed battles/part-" in adopted[0].detail
    assert check_store(root, deep=True).healthy
    assert not (root / "battles" / name).exists()
    assert before <= set(data_files(root).values())
    listed = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in Store.open(root).parts("battles")}
    assert digest in listed.values()
    ids = Store.open(root).read("battles", ["battle_id"])["battle_id"]
    assert ids.len() == 36 and ids.is_unique().all()


@pytest.mark.parametrize(("damage", "why"), [(lambda p: p.write_bytes(b"not parquet"), "truncated or not parquet"),
                                              (flip_data, "its data cannot be read"),
                                              (lambda p: shutil.copy(p.parent / "part-000002-copy", p), "of its battles are already stored")],
                         ids=["not parquet", "damaged data", "a copy"])
def test_a_listed_part_under_another_name_that_cannot_be_kept_is_set_aside(store, damage, why):
    rename_part("part-1.parquet")(store)
    renamed = store / "battles" / "part-1.parquet"
    shutil.copy(part(store, index=1), store / "battles" / "part-000002-copy")  # the copy's source, not the store's (unknown)
    damage(renamed)
    (store / "battles" / "part-000002-copy").unlink()
    bytes_before = renamed.read_bytes()
    repair = repair_store(store)
    moved = [c for c in repair.changes if c.action == "move"]
    assert [c.path for c in moved] == ["battles/part-1.parquet"] and why in moved[0].detail
    assert (store / LOST_AND_FOUND / "battles" / "part-1.parquet").read_bytes() == bytes_before
    assert check_store(store, deep=True).healthy


# ------------------------------------------------------------------------------- a repair that fails midway


def damaged_every_way(root: Path) -> None:
    """A store a repair must do every kind of step on: a part renamed (linked under a part's name), a part holding
    invalid counts (split: two parts written, the part moved), a part whose data is damaged and an atomic-write
    temporary (moved to lost+found), the manifest rewritten (its old copy kept)."""
    invalid_counts(-1, index=1)(root)
    rename_part("part-1.parquet")(root)
    flip_data(part(root, "quarantine"))
    (root / "battles" / ".part-000009-0000abcd.parquet.k2j3h4.tmp").write_bytes(b"half")


class FailingDisk:
    """Every file-system call a repair makes (rename, link, fsync, mkdir, unlink) counted; the ``at``-th fails with
    an I/O error, and with ``lasting`` every one after it too (a disk that went read-only)."""

    CALLS = ("replace", "rename", "link", "fsync", "mkdir", "unlink")

    def __init__(self, monkeypatch, at: int, lasting: bool = False):
        import errno

        self.calls, self.failed = 0, False

        def failing(real):
            def call(*args, **kwargs):
                self.calls += 1
                if self.calls == at or lasting and self.calls > at:
                    self.failed = True
                    raise OSError(errno.EIO, "Input/output error")
                return real(*args, **kwargs)

            return call

        for name in self.CALLS:
            monkeypatch.setattr(os, name, failing(getattr(os, name)))


def _problems(root: Path) -> set[tuple[str, str]]:
    return {(p.kind, p.path) for p in check_store(root, deep=True).problems if p.error}


@pytest.mark.parametrize("lasting", [False, True], ids=["one failure", "failing from then on"])
def test_a_repair_failing_at_any_step_leaves_a_consistent_store_and_loses_nothing(base, tmp_path, monkeypatch, lasting):
    """Fail each file-system call of a repair in turn: the repair is exit 3, the store is as it was (the same
    problems, no new one: no listed part sits in lost+found) or repaired, no file's bytes are lost, and a second
    repair finishes the job."""
    template = tmp_path / "template"
    shutil.copytree(base, template)
    damaged_every_way(template)
    expected = _problems(template)
    with monkeypatch.context() as counting:
        disk = FailingDisk(counting, at=0)
        repair_store(template / ".." / "template")
        total = disk.calls
    assert total > 10
    for at in range(1, total + 1):
        root = tmp_path / f"at-{at}"
        shutil.copytree(base, root)
        damaged_every_way(root)
        before = set(data_files(root).values())
        with monkeypatch.context() as failing:
            disk = FailingDisk(failing, at, lasting)
            result = arena("store", "repair", "-s", root)
        assert result.exit_code in ((3, 0) if disk.failed else (0,)), f"call {at}: {result.output}"  # 0: a last step's failure is a note
        assert before <= set(data_files(root).values()), f"call {at}: a file's bytes are gone"
        found = _problems(root)
        assert found == set() if result.exit_code == 0 else found in (expected, set()) or lasting, f"call {at}: {found}"
        assert arena("store", "repair", "-s", root).exit_code == 0, f"call {at}"
        assert _problems(root) == set() and before <= set(data_files(root).values()), f"call {at}"
        assert Store.open(root).rows("battles") == 36 - 3, f"call {at}"


# ------------------------------------------------------------------------- counts stored before they were checked


def invalid_counts(value: int, index: int = 0) -> Callable[[Path], None]:
    """A battles part rewritten as a store written before counts were checked may hold it: LMArena counts
    (``meta_tokens_a``, ``meta_h1_b``) on every battle, three of them holding ``value``."""

    def damage(root: Path) -> None:
        path = part(root, index=index)
        frame = pl.read_parquet(path).with_columns(
            pl.when(pl.int_range(pl.len()) < 3).then(pl.lit(value, pl.Int64)).otherwise(10).alias("meta_tokens_a"),
            pl.lit(2, pl.Int64).alias("meta_h1_b"),
        )
        path.unlink()
        frame.write_parquet(path)
        edited = manifest(root)  # its manifest entry as the write would have made it: those columns have values
        nulls = edited["tables"]["battles"][index]["nulls"]
        for column in ("meta_tokens_a", "meta_h1_b"):
            nulls.pop(column, None)
        (root / MANIFEST).write_text(json.dumps(edited, indent=1))

    return damage


@pytest.mark.parametrize("value", [-5, 2**53, -(2**62)])
def test_battles_with_an_invalid_stored_count_are_said_and_quarantined_whole(store, tmp_path, value):
    """A negative (or too large) count in a store would stop every style fit: `store check` reports the battles,
    `store repair` moves them to the quarantine (wrong_type, the count named, each battle whole in raw), keeps the
    others, sets the part aside unchanged, and the style fit works again. Nothing is lost."""
    invalid_counts(value)(store)
    damaged = part(store)
    relative = damaged.relative_to(store).as_posix()
    ids = set(pl.read_parquet(damaged, columns=["battle_id"])["battle_id"])
    bad = set(pl.read_parquet(damaged, columns=["battle_id"]).head(3)["battle_id"])
    fit = ["fit", "-s", store, "--style", "length", "--ci", "none", "--min-battles", "1"]
    check = arena("store", "check", "-s", store, "-f", "json")
    problems = json.loads(check.stdout)["tables"]["problems"]
    assert check.exit_code == 3 and [(p["kind"], p["path"]) for p in problems] == [("invalid_count", relative)]
    assert "3 battles with a count that is not a whole number" in problems[0]["detail"] and f"meta_tokens_a {value}" in problems[0]["detail"]
    before = data_files(store)
    repair = arena("store", "repair", "-s", store, "-f", "json")
    assert repair.exit_code == 0, repair.output
    assert json.loads(repair.stdout)["meta"]["battles_quarantined"] == 3 and "3 battles with an invalid count moved to the quarantine" in repair.stderr
    assert [c["action"] for c in json.loads(repair.stdout)["tables"]["changes"]] == ["quarantine", "rewrite"]
    assert data_files(store)[f"{LOST_AND_FOUND}/{relative}"] == before[relative]
    assert arena("store", "check", "-s", store, "--deep").exit_code == 0
    opened = Store.open(store)
    rejected = opened.read("quarantine").filter(pl.col("reason") == "wrong_type")
    assert rejected.height == 3 and rejected["detail"].str.starts_with("meta_tokens_a: not a valid count").all()
    raws = [json.loads(raw) for raw in rejected["raw"]]
    assert {r["battle_id"] for r in raws} == bad and all(r["meta_tokens_a"] == value for r in raws)
    stored = set(opened.read("battles", ["battle_id"])["battle_id"])
    assert stored.isdisjoint(bad) and ids - bad <= stored
    assert arena(*fit).exit_code == 0


def test_a_plain_check_that_meets_damaged_counts_says_so(store):
    """The counts are the data a plain check reads: when they do not decode, that is said, not a polars error."""
    invalid_counts(-5)(store)
    flip_data(part(store))
    check = arena("store", "check", "-s", store, "-f", "json")
    assert check.exit_code == 3, check.output
    assert [p["kind"] for p in json.loads(check.stdout)["tables"]["problems"]] == ["unreadable_data"]


def test_a_renamed_part_is_copied_where_the_file_system_has_no_hard_links(store, monkeypatch):
    """Without hard links the new name is a copy; the old name is then set aside in lost+found, not deleted."""
    import errno

    def no_links(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    rename_part("part-1.parquet")(store)
    data = (store / "battles" / "part-1.parquet").read_bytes()
    monkeypatch.setattr(os, "link", no_links)
    repair = repair_store(store)
    monkeypatch.undo()
    assert [c.action for c in repair.changes] == ["adopt", "rewrite"]
    assert (store / LOST_AND_FOUND / "battles" / "part-1.parquet").read_bytes() == data
    assert data in [p.read_bytes() for p in Store.open(store).parts("battles")]
    assert check_store(store, deep=True).healthy and Store.open(store).rows("battles") == 36


def test_a_file_in_a_folder_of_the_store_is_refused_as_a_source_and_kept(tmp_path):
    """A file in the store's table folders is the store's to manage: given as a source (a part copied there, a file
    named as a writer's staging file), it is refused in one line, exit 3, and kept where it is (an ingest removed the
    staging-named file as a leftover, or moved the part to lost+found, then said there was no such file). A log in
    the store's own directory, and a part set aside in its lost+found, are read."""
    root = tmp_path / "store"
    assert arena("ingest", write_votes(tmp_path / "a.jsonl", [vote(i) for i in range(10)]), "--store", root).exit_code == 0
    published = part(root)
    sources = [published.with_name(f".{published.name}.mine.tmp"), published.with_name(published.name.replace("part-000001", "part-000009"))]
    for source in sources:
        shutil.copyfile(published, source)
        result = arena("ingest", source, "--store", root, "-i", "parquet")
        assert result.exit_code == 3 and result.stderr.strip().splitlines() == [
            f"error: {source}: a file in a folder of the store {root}, whose files the store manages: copy it out of the store, then ingest the copy"], result.output
        assert source.read_bytes() == published.read_bytes()
        source.unlink()
    beside = write_votes(root / "b.jsonl", [vote(i) for i in range(10, 12)])
    assert arena("ingest", beside, "--store", root).exit_code == 0
    assert Store.open(root).rows("battles") == 12


def test_a_features_part_in_another_familys_folder_is_the_wrong_schema(tmp_path):
    """A part of one family's features put where another family's part was (the same name) lacks that family's
    columns: the check says so, the repair sets it aside, and the next `arena features` computes them again (it
    passed every check, and its battles read as having no markdown counts, never computed again)."""
    root = tmp_path / "store"
    assert arena("ingest", write_votes(tmp_path / "a.jsonl", [vote(i) for i in range(12)]), "--store", root).exit_code == 0
    update_store_features(Store.open(root))
    structure, markdown = part(root, "features/structure-v1"), part(root, "features/markdown-default-v1")
    kept = structure.read_bytes()
    shutil.copyfile(markdown, structure)
    markdown.write_bytes(kept)
    problems = [(p.kind, p.path) for p in check_store(root).problems if p.error]
    assert ("wrong_schema", str(markdown.relative_to(root))) in problems and ("wrong_schema", str(structure.relative_to(root))) in problems
    repair_store(root)
    assert check_store(root, deep=True).healthy
    update = update_store_features(Store.open(root))
    assert update.computed == 12 and set(update.families) == {"markdown", "structure"}
