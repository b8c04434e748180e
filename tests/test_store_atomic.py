"""Crash safety and concurrency of real `arena ingest` processes: SIGKILL at random instants leaves the
store exactly as before or exactly as after, and two ingests at once never corrupt it."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

from arena_cli.io.index import FOLDER
from arena_cli.io.index import MANIFEST as INDEX
from arena_cli.io.manifest import LOST_AND_FOUND, PART_NAME
from arena_cli.io.store import MANIFEST, Store

ROWS = 20_000


def ingest_command(store: Path, *sources: Path, lock_wait: float = 60) -> list[str]:
    return [sys.executable, "-m", "arena_cli", "ingest", *map(str, sources), "--store", str(store), "--lock-wait", str(lock_wait)]


def run(command):
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def write_votes(path: Path, start: int, count: int) -> Path:
    """FastChat-shaped votes with a little junk (so the quarantine is written too)."""
    frame = pl.DataFrame({
        "question_id": [f"q{i}" for i in range(start, start + count)],
        "model_a": [f"m{i % 17}" for i in range(start, start + count)],
        "model_b": [f"n{(i * 7 + 3) % 13}" for i in range(start, start + count)],
        "winner": [["model_a", "model_b", "tie", "tie (bothbad)", "draw"][i % 5] for i in range(start, start + count)],
        "tstamp": [1.7e9 + i for i in range(start, start + count)],
        "turn": [1 + i % 3 for i in range(start, start + count)],
    })
    frame.write_ndjson(path)
    return path


def snapshot(root: Path):
    """The store as a reader sees it: battle ids, quarantine rows and the manifest's tables and log."""
    store = Store.open(root)
    battles = store.read("battles", ["battle_id"])
    quarantine = store.read("quarantine", ["source_row"])
    return (
        frozenset(battles["battle_id"]) if battles is not None else frozenset(),
        quarantine.height if quarantine is not None else 0,
        json.dumps(store.manifest["tables"], sort_keys=True),
        len(store.manifest["ingests"]),
    )


def unlisted(root: Path) -> list[str]:
    """Files that neither the manifest nor the duplicate index names."""
    listed = {p["path"] for parts in Store.open(root).manifest["tables"].values() for p in parts}
    index = root / FOLDER / INDEX
    listed |= {f"{FOLDER}/{INDEX}", *(f"{FOLDER}/{run['file']}" for run in json.loads(index.read_text())["runs"])} if index.exists() else set()
    files = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    return sorted(f for f in files if f not in listed and f not in (MANIFEST, ".lock"))


def kill_while_staging(child: subprocess.Popen, store: Path, jitter: float) -> None:
    """SIGKILL ``child`` ``jitter`` seconds after its first staged file (a part or its temporary) appears."""
    existing = set(store.rglob("*part-*"))
    while child.poll() is None and not any(p not in existing for p in store.rglob("*part-*")):
        time.sleep(0.002)
    time.sleep(jitter)
    child.send_signal(signal.SIGKILL)


def test_sigkill_leaves_the_store_before_or_after_and_the_next_ingest_cleans_up(tmp_path):
    base = tmp_path / "base"
    assert run(ingest_command(base, write_votes(tmp_path / "old.jsonl", 0, 2_000))).returncode == 0
    new_sources = [write_votes(tmp_path / f"new{k}.jsonl", 2_000 + k * ROWS, ROWS) for k in range(2)]
    before = snapshot(base)

    reference = tmp_path / "reference"
    shutil.copytree(base, reference)
    started = time.monotonic()
    assert run(ingest_command(reference, *new_sources)).returncode == 0
    duration = time.monotonic() - started
    after_ids, after_quarantine, _, after_ingests = snapshot(reference)
    assert len(after_ids) == len(before[0]) + 2 * ROWS * 4 // 5

    outcomes = []
    for seed in range(5):
        rng = random.Random(seed)
        store = tmp_path / f"s{seed}"
        shutil.copytree(base, store)
        child = subprocess.Popen(ingest_command(store, *new_sources), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if seed % 2:  # anywhere in the run
            time.sleep(rng.uniform(0.2, 1.0) * duration)
            child.send_signal(signal.SIGKILL)
        else:  # while parts are being written and published, the delicate moment
            kill_while_staging(child, store, rng.uniform(0, 0.25))
        child.wait()
        now = snapshot(store)
        if now == before:
            outcomes.append("before")
        else:  # published: exactly the reference result (part names aside)
            assert (now[0], now[1], now[3]) == (after_ids, after_quarantine, after_ingests)
            outcomes.append("after")
            continue
        # The next ingest removes the temporaries the killed one left, sets its staged parts aside (it cannot tell
        # them from published parts whose manifest went back) and does the work.
        finished = run(ingest_command(store, *new_sources))
        assert finished.returncode == 0, finished.stderr
        aside = unlisted(store)
        assert all(f.startswith(f"{LOST_AND_FOUND}/") and PART_NAME.fullmatch(Path(f).name) for f in aside), aside
        final = snapshot(store)
        assert (final[0], final[1]) == (after_ids, after_quarantine)
        for name in aside:  # nothing in them is missing from the store: ingesting them again adds nothing
            if name.startswith(f"{LOST_AND_FOUND}/battles/"):
                assert set(pl.read_parquet(store / name, columns=["battle_id"])["battle_id"]) <= set(final[0])
    assert "before" in outcomes, outcomes  # some kills landed mid-run


def test_two_ingests_at_once_both_land_and_never_corrupt(tmp_path):
    store = tmp_path / "s"
    first = write_votes(tmp_path / "a.jsonl", 0, ROWS)
    second = write_votes(tmp_path / "b.jsonl", ROWS, ROWS)
    children = [subprocess.Popen(ingest_command(store, source), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for source in (first, second)]
    results = [(child.wait(timeout=60), child.stderr.read()) for child in children]
    assert [code for code, _ in results] == [0, 0], results
    ids, quarantined, _, ingests = snapshot(store)
    assert len(ids) == 2 * ROWS * 4 // 5 and quarantined == 2 * ROWS // 5 and ingests == 2
    assert unlisted(store) == []


def test_a_short_lock_wait_fails_with_exit_5_and_a_clear_message(tmp_path):
    store = tmp_path / "s"
    source = write_votes(tmp_path / "a.jsonl", 0, 100)
    with Store.open(store, create=True).lock():
        blocked = run(ingest_command(store, source, lock_wait=0.3))
    assert blocked.returncode == 5
    assert "locked by another arena run" in blocked.stderr and "--lock-wait" in blocked.stderr
    assert not (store / MANIFEST).exists()
    assert run(ingest_command(store, source, lock_wait=0.3)).returncode == 0
    assert os.path.exists(store / MANIFEST)
