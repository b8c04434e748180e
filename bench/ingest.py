"""Ingest benchmark: a large FastChat-shaped vote log through `arena ingest`, timed, with its peak memory.

Generates a JSONL of ``--rows`` battles (default 5,000,000) shaped like FastChat's ``clean_battle`` dumps: the
simulator's votes without texts (``arena simulate --no-texts``: ``question_id, model_a, model_b, winner, judge,
tstamp, language, turn, anony, category, conv_metadata`` with the per-side token/header/list/bold counts), drawn
in parts of 250,000 among 120 models, with FastChat's ``tie (bothbad)`` label and two more columns of the dumps,
``is_code`` and a nested ``dedup_tag``. Then it runs ``python -m arena_cli ingest`` on it in a child process and reports rows/s and that child's peak
RSS (from ``os.wait4``, so neither the generator nor an earlier run counts). With
``--reingest`` the same file is ingested a second time, which must add nothing (every row a duplicate).

    python bench/ingest.py                    # 5M rows
    python bench/ingest.py --rows 500000 --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHUNK_ROWS = 250_000
MODELS = 120


def generate(path: Path, rows: int, seed: int) -> None:
    """The vote log, part by part (memory bounded by one part); each part's period follows the previous one."""
    import numpy as np
    import polars as pl

    from arena_cli.simulate import simulate_in_parts

    rng = np.random.default_rng(seed)
    with open(path, "wb") as out:
        for k, sim in enumerate(simulate_in_parts(rows, MODELS, seed, part_battles=CHUNK_ROWS, texts=False)):
            size = sim.battles.height
            sim.battles.with_columns(
                pl.col("winner").replace("both_bad", "tie (bothbad)"),
                pl.col("tstamp") + k * 28 * 86_400,
                (pl.col("category") == "coding").alias("is_code"),
                pl.DataFrame({"high_freq": rng.random(size) < 0.05, "sampled": rng.random(size) < 0.95}).to_struct("dedup_tag"),
            ).write_ndjson(out)


def run_ingest(source: Path, store: Path) -> dict:
    """One `arena ingest` child process: wall time, exit status, peak RSS (of that child only) and summary."""
    command = [sys.executable, "-m", "arena_cli", "ingest", str(source), "--store", str(store), "--format", "json"]
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        return {
            "seconds": seconds,
            "returncode": child.returncode,
            "peak_rss_mb": usage.ru_maxrss / 1024,  # Linux reports KiB
            "stdout": stdout.read().decode(),
            "stderr": stderr.read().decode(),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000, help="battles to generate (default 5,000,000)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the generated JSONL here and reuse it on the next run (default: a temporary folder, removed after)")
    parser.add_argument("--reingest", action="store_true", help="ingest the same file a second time and time that too (adds nothing)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="arena-bench-") as tmp:
        work = args.workdir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        source, store = work / f"battles-{args.rows}-{args.seed}.jsonl", work / "store"
        started = time.perf_counter()
        if not source.exists():
            generate(source, args.rows, args.seed)
        report = {"rows": args.rows, "file_mb": round(source.stat().st_size / 2**20, 1), "generate_s": round(time.perf_counter() - started, 1), "runs": []}
        shutil.rmtree(store, ignore_errors=True)
        for label in ("ingest", "reingest")[: 2 if args.reingest else 1]:
            run = run_ingest(source, store)
            if run["returncode"] != 0:
                sys.exit(f"{label} failed with exit {run['returncode']}:\n{run['stderr']}")
            summary = json.loads(run["stdout"])["sources"][0]
            report["runs"].append({
                "run": label,
                "seconds": round(run["seconds"], 1),
                "rows_per_s": round(args.rows / run["seconds"]),
                "peak_rss_mb": round(run["peak_rss_mb"]),
                "stored": summary["stored"],
                "duplicates": summary["duplicates"],
                "quarantined": summary["quarantined"],
            })
        shutil.rmtree(store, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{report['rows']:,} rows, {report['file_mb']:,} MB of JSONL (generated in {report['generate_s']} s)")
    for r in report["runs"]:
        print(f"{r['run']:>9}: {r['seconds']:8.1f} s  {r['rows_per_s']:>10,} rows/s  peak RSS {r['peak_rss_mb']:>6,} MB  "
              f"stored {r['stored']:,}  duplicates {r['duplicates']:,}  quarantined {r['quarantined']:,}")


if __name__ == "__main__":
    main()
