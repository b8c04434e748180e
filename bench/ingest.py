"""Ingest benchmark: a large FastChat-shaped vote log through `arena ingest`, timed, with its peak memory.

Generates a JSONL of ``--rows`` battles (default 5,000,000) shaped like FastChat's ``clean_battle`` dumps
(``question_id, model_a, model_b, winner, judge, turn, anony, language, tstamp, conv_metadata`` with the
per-side token/header/list/bold counts, plus ``is_code`` and a nested ``dedup_tag``; no conversation texts),
then runs ``python -m arena_cli ingest`` on it in a child process and reports rows/s and that child's peak
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
LANGUAGES = ("English", "Chinese", "Russian", "German", "Spanish", "French", "Japanese", "Portuguese", "Korean", "unknown")
WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")
WINNER_SHARES = (0.35, 0.35, 0.12, 0.18)


def _models(count: int) -> list[str]:
    families = ("gpt-4", "claude-3", "gemini-1.5", "llama-3", "mixtral", "qwen2", "command-r", "yi", "deepseek", "phi-3")
    return [f"{families[i % len(families)]}-{['mini', 'pro', 'large', 'turbo', 'chat', 'instruct'][i % 6]}-{2023 + i % 3}{i:02d}" for i in range(count)]


def _chunk(rng, start: int, rows: int, models: list[str]):
    """One chunk of battles as a polars frame (vectorized: no per-row Python)."""
    import numpy as np
    import polars as pl

    index = np.arange(start, start + rows)
    a = rng.integers(0, len(models), rows)
    b = (a + rng.integers(1, len(models), rows)) % len(models)  # never a self-battle
    names = pl.Series(models)

    def side(s: str) -> dict:
        tokens = rng.integers(5, 2500, rows)
        return {
            f"sum_assistant_{s}_tokens": tokens,
            f"header_count_{s}": pl.DataFrame({f"h{i}": rng.poisson(0.4 / i, rows) for i in range(1, 7)}).to_struct(),
            f"list_count_{s}": pl.DataFrame({"ordered": rng.poisson(1.5, rows), "unordered": rng.poisson(2.0, rows)}).to_struct(),
            f"bold_count_{s}": pl.DataFrame({"**": rng.poisson(1.2, rows), "__": rng.poisson(0.05, rows)}).to_struct(),
        }

    meta = pl.DataFrame({**side("a"), **side("b")}).to_struct("conv_metadata")
    return pl.DataFrame(
        {
            "question_id": [f"{i:08x}{r:024x}" for i, r in zip(index.tolist(), rng.integers(0, 2**62, rows).tolist())],
            "model_a": names.gather(a),
            "model_b": names.gather(b),
            "winner": pl.Series(WINNERS).gather(rng.choice(len(WINNERS), rows, p=WINNER_SHARES)),
            "judge": pl.Series([f"arena_user_{j}" for j in rng.integers(0, rows // 3 + 1, rows)]),
            "turn": rng.choice([1, 1, 1, 1, 2, 3, 5], rows),
            "anony": rng.random(rows) < 0.9,
            "language": pl.Series(LANGUAGES).gather(rng.choice(len(LANGUAGES), rows)),
            "tstamp": 1_682_000_000.0 + index * 7.3 + rng.random(rows).round(4),
            "conv_metadata": meta,
            "is_code": rng.random(rows) < 0.2,
            "dedup_tag": pl.DataFrame({"high_freq": rng.random(rows) < 0.05, "sampled": rng.random(rows) < 0.95}).to_struct(),
        }
    )


def generate(path: Path, rows: int, seed: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    models = _models(120)
    with open(path, "wb") as out:
        for start in range(0, rows, CHUNK_ROWS):
            _chunk(rng, start, min(CHUNK_ROWS, rows - start), models).write_ndjson(out)


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
