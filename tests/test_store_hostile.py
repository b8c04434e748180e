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
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from arena_cli.cli import app
from arena_cli.features.cache import update_store_features
from arena_cli.io.index import FOLDER as INDEX
from arena_cli.io.ingest import ingest_to_store
from arena_cli.io.manifest import LOST_AND_FOUND
from arena_cli.io.store import MANIFEST, Store

runner = CliRunner()


def arena(*args):
    return runner.invoke(app, [str(a) for a in args])


def vote(i: int) -> dict:
    return {"question_id": f"q{i}", "model_a": f"m{i % 4}", "model_b": f"m{(i + 1) % 4}", "winner": ["model_a", "model_b", "tie"][i % 3], "score": i,
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
    for path, digest in damaged.items():  # each file kept, or moved aside with its bytes
        assert after.get(path) == digest or after.get(f"{LOST_AND_FOUND}/{path}") == digest, path
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


def _readable_battles(root: Path) -> dict[str, set[str]]:
    """The battle ids of every battles part file that polars can read with its ids, by file name."""
    found = {}
    for path in sorted((root / "battles").glob("part-*.parquet")):
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
    assert message.startswith(f"error: cannot write to store {store}: {reason} ({store / 'battles'}/part-000005-")
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
    leftover = store / "battles" / "part-000005-0000abcd.parquet"
    temporary = store / "quarantine" / ".part-000005-0000abcd.parquet.k2j3h4.tmp"
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
    staged = store / "battles" / "part-000005-0000abcd.parquet"
    frame = pl.read_parquet(part(store)).with_columns(pl.format("new-{}", "battle_id").alias("battle_id"))
    frame.write_parquet(staged)
    shutil.copy(part(store), store / "battles" / "part-000005-0000dcba.parquet")  # repeats stored battles
    (store / MANIFEST).write_text((store / MANIFEST).read_text()[:120])  # and the manifest damaged
    dry = arena("store", "repair", "-s", store, "--dry-run", "-f", "json")
    actions = {c["path"]: c["action"] for c in json.loads(dry.stdout)["tables"]["changes"]}
    assert actions["battles/part-000005-0000abcd.parquet"] == actions["battles/part-000005-0000dcba.parquet"] == "move"
    assert staged.exists()  # a dry run changes nothing
    adopted = arena("store", "repair", "-s", store, "--adopt-unpublished", "-f", "json")
    actions = {c["path"]: c["action"] for c in json.loads(adopted.stdout)["tables"]["changes"]}
    assert actions["battles/part-000005-0000abcd.parquet"] == "adopt" and actions["battles/part-000005-0000dcba.parquet"] == "move"
    ids = Store.open(store).read("battles", ["battle_id"])["battle_id"]
    assert ids.is_unique().all() and ids.len() == 36 + frame.height
    assert (store / LOST_AND_FOUND / "battles" / "part-000005-0000dcba.parquet").exists()
