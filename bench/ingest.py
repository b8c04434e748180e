"""Benchmark of `arena ingest` on the shapes users' vote logs have: rows/s, MB/s and peak RSS.

For each size (``--rows``, a comma list) and shape (bench/shapes.py: LMArena's nested-conv_metadata parquet,
FastChat's JSONL and JSON dumps without and with short conversations, conversations with realistic texts in
JSONL and parquet, with and without conv_metadata, flat count columns), the simulated votes are generated once
(cached in ``--workdir``), then ingested into a new store by ``python -m arena_cli ingest`` as a whole process
(bench/measure.py: wall time and that process's own peak RSS). With ``--reingest`` the same file is ingested a
second time, which must add nothing (every row a duplicate). With ``--onto N`` each file is also ingested into a
store that already holds N other votes of the shape (another seed, other ids; filled once per shape, copied for
each run): with the reingest, this shows what the store's size costs an ingest (its duplicate index). With more than
one size, each shape's time and peak RSS are also given as ratios to its smallest size's: linear time is a ratio
equal to the size ratio, memory bounded by the batch a ratio near 1.

    python bench/ingest.py                                        # 1M rows of every shape
    python bench/ingest.py --rows 1000000,10000000 --shapes nested-parquet,fastchat-jsonl
    python bench/ingest.py --rows 100000 --shapes texts-jsonl,texts-meta-parquet --reingest
    python bench/ingest.py --rows 1000000,10000000 --shapes nested-parquet --reingest --onto 10000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from measure import ARENA, byte_compile, machine, run
from shapes import DEFAULT_SHAPES, default_seed, ensure, parse_names


def ingest(source: Path, store: Path, limit_mb: float) -> dict:
    """One `arena ingest` process: seconds, peak RSS and its JSON summary of the source (nan seconds and no
    summary when it was killed above ``limit_mb``)."""
    done = run([*ARENA, "ingest", str(source), "--store", str(store), "--format", "json"], limit_mb)
    summary = {} if done.killed else json.loads(done.stdout)["tables"]["sources"][0]
    return {"seconds": done.seconds, "rss_mb": round(done.rss_mb), **{k: summary.get(k, 0) for k in ("stored", "duplicates", "quarantined")}}


def report(rows: list[dict]) -> str:
    """Markdown: per size, shape and run, time, throughput, peak RSS, the ratios to the smallest size, and the
    machine's load average (1 minute) when the run ended."""
    smallest = min(r["rows"] for r in rows)
    lines = ["| rows | shape | file MB | run | wall s | rows/s | MB/s | peak RSS MB | x time | x RSS | stored | duplicates | quarantined | load |",
             "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        base = next((b for b in rows if (b["rows"], b["shape"], b["run"]) == (smallest, r["shape"], r["run"])), None)
        ratios = f"{r['seconds'] / base['seconds']:.1f} | {r['rss_mb'] / base['rss_mb']:.2f}" if base and base is not r else " | "
        if r["seconds"] != r["seconds"]:
            lines.append(f"| {r['rows']:,} | {r['shape']} | {r['file_mb']:,.0f} | {r['run']} | killed | | | > {r['rss_mb']:,} | | | | | | {r['load_average'][0]} |")
            continue
        lines.append(f"| {r['rows']:,} | {r['shape']} | {r['file_mb']:,.0f} | {r['run']} | {r['seconds']:.1f} | {r['rows'] / r['seconds']:,.0f} | "
                     f"{r['file_mb'] / r['seconds']:,.1f} | {r['rss_mb']:,} | {ratios} | {r['stored']:,} | {r['duplicates']:,} | {r['quarantined']:,} | {r['load_average'][0]} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=[1_000_000], type=lambda s: [int(x) for x in s.split(",")], help="votes per file, comma list (default 1000000)")
    parser.add_argument("--shapes", default="all", help=f"comma list (default all: {', '.join(DEFAULT_SHAPES)})")
    parser.add_argument("--models", type=int, default=300)
    parser.add_argument("--workdir", default=None, type=Path, help="generated files, kept for the next run (default $ARENA_BENCH_DIR or /tmp/arena-bench)")
    parser.add_argument("--reingest", action="store_true", help="ingest the same file a second time and time that too (adds nothing)")
    parser.add_argument("--onto", type=int, default=0, help="also ingest each file into a store holding this many other votes of the shape")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--memory-limit-gb", type=float, default=16.0, help="kill a run whose RSS passes this (reported as killed)")
    args = parser.parse_args()

    workdir = args.workdir or Path(os.environ.get("ARENA_BENCH_DIR", "/tmp/arena-bench"))
    workdir.mkdir(parents=True, exist_ok=True)
    shapes = parse_names(args.shapes)
    byte_compile()
    results: dict = {"machine_at_start": machine(), "runs": []}

    def timed(n: int, name: str, path: Path, store: Path, label: str) -> None:
        row = {"rows": n, "shape": name, "file_mb": path.stat().st_size / 2**20, "run": label,
               **ingest(path, store, args.memory_limit_gb * 1024), "load_average": machine()["load_average"]}
        print(json.dumps(row), file=sys.stderr, flush=True)
        results["runs"].append(row)

    bases = {}
    if args.onto:
        # Part k of a file takes the votes of its seed + k: a seed this far off shares no part (nor id) with a --rows file.
        other_votes = default_seed(args.onto, args.models) + 10**9
        base_paths = ensure(shapes, args.onto, args.models, workdir, other_votes, log=lambda m: print(m, file=sys.stderr, flush=True))
        for name in shapes:
            bases[name] = workdir / f"ingest-base-{name}-{args.onto}"
            shutil.rmtree(bases[name], ignore_errors=True)
            timed(args.onto, name, base_paths[name], bases[name], "fill")
    for n in args.rows:
        paths = ensure(shapes, n, args.models, workdir, log=lambda m: print(m, file=sys.stderr, flush=True))
        for name in shapes:
            store = workdir / f"ingest-store-{name}"
            shutil.rmtree(store, ignore_errors=True)
            for label in ("ingest", "reingest")[: 2 if args.reingest else 1]:
                timed(n, name, paths[name], store, label)
            shutil.rmtree(store, ignore_errors=True)
            if name in bases:
                shutil.copytree(bases[name], store)
                timed(n, name, paths[name], store, f"onto {args.onto:,}")
                shutil.rmtree(store, ignore_errors=True)
    for base in bases.values():
        shutil.rmtree(base, ignore_errors=True)
    results["machine_at_end"] = machine()
    (workdir / "results-ingest.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2) if args.json else report(results["runs"]))


if __name__ == "__main__":
    main()
