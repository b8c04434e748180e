"""No accepted battle is ever lost: random sequences of ingests, runs killed at a random instant of their write,
manifest damage and repairs. A kill is simulated exactly: at a chosen point of the write (before a part is
staged, with its temporary written, once it is renamed, before or after the manifest is replaced, while the
duplicate index is saved after it) the store
directory is copied as it is on disk, the run is aborted, and the copy replaces the store, as if the process
had died there (no clean-up ran)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arena_cli.io.index as index_module
import arena_cli.io.store as store_module
from arena_cli.errors import InputError
from arena_cli.io.ingest import ingest_to_store
from arena_cli.io.manifest import LOST_AND_FOUND
from arena_cli.io.repair import check_store, repair_store
from arena_cli.io.store import MANIFEST, Store


class Killed(BaseException):
    """The process died here."""


def manifest_edit(change):
    def damage(root: Path) -> bool:
        try:
            manifest = json.loads((root / MANIFEST).read_text())
            if not manifest["tables"].get("battles"):
                return False
        except (ValueError, KeyError, TypeError, AttributeError):  # damaged already
            return False
        change(manifest)
        (root / MANIFEST).write_text(json.dumps(manifest))
        return True

    return damage


def rename_first(manifest: dict) -> None:
    entry = manifest["tables"]["battles"][0]
    entry["path"] = entry["path"].replace("part-", "part-9")


def truncated(root: Path) -> bool:
    data = (root / MANIFEST).read_bytes()
    (root / MANIFEST).write_bytes(data[: len(data) // 3])
    return True


DAMAGES = {
    "truncate manifest": truncated,
    "delete manifest": lambda root: (root / MANIFEST).unlink() is None,
    "garbage manifest": lambda root: (root / MANIFEST).write_bytes(b"\x00\xffnot json") is None,
    "rename a listed part": manifest_edit(rename_first),
    "drop an entry": manifest_edit(lambda m: m["tables"]["battles"].pop()),
    "wrong row count": manifest_edit(lambda m: m["tables"]["battles"][0].update(rows=10**6)),
    "list a part twice": manifest_edit(lambda m: m["tables"]["battles"].append(dict(m["tables"]["battles"][0]))),
    "lower the generation": manifest_edit(lambda m: m.update(generation=0)),
}

operations = st.lists(
    st.one_of(
        st.tuples(st.just("ingest"), st.integers(1, 5), st.booleans()),
        st.tuples(st.just("killed"), st.integers(1, 5), st.integers(0, 20)),
        st.tuples(st.just("damage"), st.sampled_from(sorted(DAMAGES))),
        st.tuples(st.just("repair")),
    ),
    min_size=1,
    max_size=7,
)


class Run:
    """One example: the store, the battles accepted by completed ingests, the next fresh id."""

    def __init__(self, work: Path):
        self.work, self.root = work, work / "store"
        self.accepted: set[str] = set()
        self.fresh = 0
        self.sources = 0

    def votes(self, count: int, junk: bool) -> Path:
        lines = []
        for _ in range(count):
            i = self.fresh
            self.fresh += 1
            lines.append(json.dumps({"question_id": f"b{i}", "model_a": f"m{i % 3}", "model_b": f"m{(i + 1) % 3}", "winner": "tie"}))
        if self.accepted:  # an exact duplicate of a stored battle
            first = min(self.accepted, key=lambda b: int(b[1:]))
            i = int(first[1:])
            lines.append(json.dumps({"question_id": first, "model_a": f"m{i % 3}", "model_b": f"m{(i + 1) % 3}", "winner": "tie"}))
        if junk:
            lines.append("{junk")
        self.sources += 1
        path = self.work / f"votes-{self.sources}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        return path

    def ingest(self, count: int, junk: bool) -> None:
        source = self.votes(count, junk)
        before = data_files(self.root)
        try:
            ingest_to_store(Store.open(self.root, create=True), [source])
        except InputError:  # a damaged store: nothing written
            assert data_files(self.root) == before
            return
        self.accepted |= {f"b{i}" for i in range(self.fresh - count, self.fresh)}

    def killed(self, count: int, point: int, monkeypatch: pytest.MonkeyPatch) -> None:
        source = self.votes(count, junk=point % 2 == 0)
        before = data_files(self.root)
        image = self.work / "image"
        points = iter(range(10**6))

        def instant() -> None:
            if next(points) == point:
                shutil.copytree(self.root, image)
                raise Killed

        real_write, real_bytes = store_module.atomic_write, store_module.atomic_write_bytes

        def atomic_write(path, write):
            instant()
            real_write(path, lambda tmp: (write(tmp), instant()))
            instant()

        def atomic_write_bytes(path, data):
            instant()
            real_bytes(path, data)
            instant()

        with monkeypatch.context() as patch:
            patch.setattr(store_module, "atomic_write", atomic_write)
            patch.setattr(store_module, "atomic_write_bytes", atomic_write_bytes)
            patch.setattr(index_module, "atomic_write", atomic_write)  # the duplicate index, saved once published
            patch.setattr(index_module, "atomic_write_bytes", atomic_write_bytes)
            try:
                ingest_to_store(Store.open(self.root, create=True), [source])
            except Killed:
                shutil.rmtree(self.root, ignore_errors=True)
                image.rename(self.root)
                return
            except InputError:  # a damaged store: refused before anything was staged
                assert data_files(self.root) == before
                return
        self.accepted |= {f"b{i}" for i in range(self.fresh - count, self.fresh)}  # it finished before the instant

    def damage(self, name: str) -> None:
        if (self.root / MANIFEST).exists():
            DAMAGES[name](self.root)

    def repair(self) -> None:
        """`arena store repair`, then the documented recovery: ingest the battles it moved to lost+found."""
        if not self.root.is_dir() or not any(self.root.iterdir()):
            return
        try:
            repair_store(self.root)
        except InputError as error:  # nothing to repair: no store there (a first run killed before staging)
            assert "no store" in str(error)
            return
        assert check_store(self.root).healthy
        aside = self.root / LOST_AND_FOUND / "battles"
        for part in sorted(aside.glob("part-*.parquet*")) if aside.is_dir() else []:
            ingest_to_store(Store.open(self.root), [part])

    def stored(self) -> pl.Series:
        battles = Store.open(self.root).read("battles", ["battle_id"])
        return battles["battle_id"] if battles is not None else pl.Series("battle_id", [], pl.String)

    def on_disk(self) -> set[str]:
        """Every battle id in a parquet file anywhere in the store (listed, unlisted or set aside)."""
        ids: set[str] = set()
        for path in self.root.rglob("*.parquet*"):
            try:
                ids |= set(pl.read_parquet(path, columns=["battle_id"])["battle_id"])
            except Exception:
                continue
        return ids


def data_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"} if root.exists() else {}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(operations)
def test_no_accepted_battle_is_ever_lost(tmp_path_factory, monkeypatch, steps):
    run = Run(tmp_path_factory.mktemp("run"))
    for step in steps:
        if step[0] == "ingest":
            run.ingest(step[1], step[2])
        elif step[0] == "killed":
            run.killed(step[1], step[2], monkeypatch)
        elif step[0] == "damage":
            run.damage(step[1])
        else:
            run.repair()
        assert run.accepted <= run.on_disk(), step  # never deleted, whatever the manifest says
    run.repair()
    if run.accepted:
        stored = run.stored()
        assert run.accepted <= set(stored)
        assert stored.is_unique().all()  # nothing adopted or ingested twice
