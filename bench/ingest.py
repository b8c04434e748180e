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

Large files of logs with texts take long to simulate and much disk (10M rows of ``fastchat-short-jsonl``: 23.6 GB
of JSON lines). ``--copies K`` makes a JSON-lines file of R rows as K copies of the generated file of R/K rows,
copy k with its ids prefixed ``c<k>-`` (so that each row is a vote of its own); ``--gzip`` ingests the file
gzip-compressed (level 1, ``<name>.jsonl.gz``). Both are written once, streamed, and cached in ``--workdir``
beside the generated files; the table gives each file's MB on disk and its uncompressed MB, which MB/s is of.

    python bench/ingest.py                                        # 1M rows of every shape
    python bench/ingest.py --rows 1000000,10000000 --shapes nested-parquet,fastchat-jsonl
    python bench/ingest.py --rows 100000 --shapes texts-jsonl,texts-meta-parquet --reingest
    python bench/ingest.py --rows 1000000,10000000 --shapes nested-parquet --reingest --onto 10000000
    python bench/ingest.py --rows 1000000,10000000 --shapes fastchat-short-jsonl --copies 10 --gzip
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import BinaryIO

from measure import ARENA, byte_compile, machine, run
from shapes import DEFAULT_SHAPES, KINDS, SHAPES, Shape, default_seed, ensure, parse_names

from arena_cli.io.dialects import ARENA_COLUMNS  # after shapes, which puts this checkout first on sys.path
from arena_cli.simulate import simulate_in_parts

#: Bytes read at a time when copying a JSON-lines file (then completed to the end of its line).
BLOCK = 64 * 2**20


@cache
def id_field(shape: Shape, n_models: int) -> str:
    """The field a shape's rows keep their battle id in (the first of the names `arena ingest` takes it from),
    read off a few simulated rows; a shape without one cannot be copied (its copies would be new votes only by
    their content hash, and duplicates by nothing)."""
    options, _ = KINDS[shape.kind]
    columns = shape.layout(next(simulate_in_parts(4, n_models, 0, part_battles=4, **options)), 0).columns
    found = next((name for name in ARENA_COLUMNS["battle_id"] if name in columns), None)
    if found is None:
        raise SystemExit(f"--copies: shape {shape.name} has no id field ({', '.join(ARENA_COLUMNS['battle_id'])}), so its copies could not have ids of their own")
    return found


def blocks(handle: BinaryIO) -> Iterator[bytes]:
    """A file in blocks of whole lines, about BLOCK bytes each."""
    while block := handle.read(BLOCK):
        yield block + handle.readline()


def prefixed(block: bytes, field: str, prefix: str) -> bytes:
    """The block's JSON lines with ``prefix`` before each one's ``field`` value. Where the id opens every line (as
    polars writes them), one replace does it, as ``sed 's/^{"question_id":"/&c1-/'`` would; otherwise each line
    is parsed and written again with its id as text (``"c1-" + value``), wherever the key is and whatever the
    value's type."""
    opening, marked = f'\n{{"{field}":"'.encode(), f'\n{{"{field}":"{prefix}'.encode()
    lines = block.count(b"\n") + (not block.endswith(b"\n"))
    done = (b"\n" + block).replace(opening, marked)[1:]
    if len(done) - len(block) == lines * len(prefix.encode()):
        return done
    out = []
    for number, line in enumerate(block.splitlines(keepends=True)):
        if not line.strip():
            out.append(line)
            continue
        row = json.loads(line)
        if not isinstance(row, dict) or field not in row:
            raise SystemExit(f"--copies: line {number + 1} of a block has no {field!r} field: {line[:200]!r}")
        row[field] = f"{prefix}{row[field]}"
        out.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
    return b"".join(out)


def derived_path(base: Path, copies: int, compress: bool) -> Path:
    """Where the copies and/or gzip of ``base`` are cached: its name with ``-copies<K>`` and ``.gz``."""
    stem, _, container = base.name.rpartition(".")
    name = f"{stem}-copies{copies}.{container}" if copies > 1 else base.name
    return base.with_name(name + (".gz" if compress else ""))


def data_bytes(path: Path) -> int:
    """The uncompressed bytes of an input file: a derived file's are kept beside it (``.bytes``)."""
    sidecar = path.with_name(path.name + ".bytes")
    return int(sidecar.read_text()) if sidecar.exists() else path.stat().st_size


def derive(base: Path, target: Path, field: str | None, copies: int, compress: bool) -> None:
    """Write ``target``: ``copies`` copies of the JSON-lines file ``base``, copy k with ids prefixed ``c<k>-``
    (one copy as is when ``copies`` is 1), gzip level 1 when ``compress``; streamed block by block, under a
    temporary name renamed when whole, its uncompressed size in ``<target>.bytes``."""
    tmp = target.with_name(target.name + ".partial")
    written = 0
    with (gzip.open(tmp, "wb", compresslevel=1) if compress else open(tmp, "wb")) as out:
        for k in range(copies):
            with open(base, "rb") as source:
                for block in blocks(source):
                    block = prefixed(block, field, f"c{k}-") if field else block
                    written += len(block)
                    out.write(block)
    target.with_name(target.name + ".bytes").write_text(str(written))
    tmp.rename(target)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def inputs(names: list[str], n: int, n_models: int, workdir: Path, copies: int, compress: bool,
           seed: int | None = None) -> dict[str, Path]:
    """The file each shape's ``n`` rows are ingested from: the generated one, or (``copies``, ``compress``) the
    one derived from the generated file of ``n / copies`` rows, each cached in ``workdir``."""
    if copies == 1 and not compress:
        return ensure(names, n, n_models, workdir, seed, log=log)
    part = n // copies
    part_seed = default_seed(part, n_models) if seed is None else seed
    targets = {name: derived_path(SHAPES[name].path(workdir, part, n_models, part_seed), copies, compress) for name in names}
    missing = [name for name in names if not targets[name].exists()]
    if missing:
        bases = ensure(missing, part, n_models, workdir, part_seed, log=log)
        for name in missing:
            log(f"writing {targets[name].name}: {copies} x {part:,} rows{', gzip' if compress else ''} ...")
            derive(bases[name], targets[name], id_field(SHAPES[name], n_models) if copies > 1 else None, copies, compress)
    return targets


def check_derivable(names: list[str], sizes: list[int], copies: int, compress: bool, n_models: int) -> None:
    """Refuse, before generating anything, what --copies and --gzip cannot make."""
    if copies < 1:
        raise SystemExit("--copies must be at least 1")
    uneven = [n for n in sizes if n % copies]
    if uneven:
        raise SystemExit(f"--copies {copies}: rows {', '.join(map(str, uneven))} not divisible by {copies}")
    if copies > 1 and (wrong := [name for name in names if SHAPES[name].container != "jsonl"]):
        raise SystemExit(f"--copies takes JSON-lines shapes; not {', '.join(wrong)}")
    if compress and (wrong := [name for name in names if SHAPES[name].container not in ("jsonl", "json")]):
        raise SystemExit(f"--gzip takes JSON and JSON-lines shapes; not {', '.join(wrong)}")
    if copies > 1:
        for name in names:
            id_field(SHAPES[name], n_models)


def ingest(source: Path, store: Path, limit_mb: float) -> dict:
    """One `arena ingest` process: seconds, peak RSS and its JSON summary of the source (nan seconds and no
    summary when it was killed above ``limit_mb``)."""
    done = run([*ARENA, "ingest", str(source), "--store", str(store), "--format", "json"], limit_mb)
    summary = {} if done.killed else json.loads(done.stdout)["tables"]["sources"][0]
    return {"seconds": done.seconds, "rss_mb": round(done.rss_mb), **{k: summary.get(k, 0) for k in ("stored", "duplicates", "quarantined")}}


def report(rows: list[dict]) -> str:
    """Markdown: per size, shape and run, the file's MB on disk and uncompressed (the JSON read: MB/s is of
    these), time, throughput, peak RSS, the ratios to the smallest size, and the machine's load average
    (1 minute) when the run ended."""
    smallest = min(r["rows"] for r in rows)
    lines = ["| rows | shape | file MB | data MB | run | wall s | rows/s | MB/s | peak RSS MB | x time | x RSS | stored | duplicates | quarantined | load |",
             "|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        base = next((b for b in rows if (b["rows"], b["shape"], b["run"]) == (smallest, r["shape"], r["run"])), None)
        ratios = f"{r['seconds'] / base['seconds']:.1f} | {r['rss_mb'] / base['rss_mb']:.2f}" if base and base is not r else " | "
        if r["seconds"] != r["seconds"]:
            lines.append(f"| {r['rows']:,} | {r['shape']} | {r['file_mb']:,.1f} | {r['data_mb']:,.1f} | {r['run']} | killed | | | > {r['rss_mb']:,} | | | | | | {r['load_average'][0]} |")
            continue
        lines.append(f"| {r['rows']:,} | {r['shape']} | {r['file_mb']:,.1f} | {r['data_mb']:,.1f} | {r['run']} | {r['seconds']:.1f} | {r['rows'] / r['seconds']:,.0f} | "
                     f"{r['data_mb'] / r['seconds']:,.1f} | {r['rss_mb']:,} | {ratios} | {r['stored']:,} | {r['duplicates']:,} | {r['quarantined']:,} | {r['load_average'][0]} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=[1_000_000], type=lambda s: [int(x) for x in s.split(",")], help="votes per file, comma list (default 1000000)")
    parser.add_argument("--shapes", default="all", help=f"comma list (default all: {', '.join(DEFAULT_SHAPES)})")
    parser.add_argument("--models", type=int, default=300)
    parser.add_argument("--workdir", default=None, type=Path, help="generated files, kept for the next run (default $ARENA_BENCH_DIR or /tmp/arena-bench)")
    parser.add_argument("--reingest", action="store_true", help="ingest the same file a second time and time that too (adds nothing)")
    parser.add_argument("--onto", type=int, default=0, help="also ingest each file into a store holding this many other votes of the shape")
    parser.add_argument("--copies", type=int, default=1, help="JSON lines: make the file of R rows as this many copies of the generated file of "
                        "R/copies rows, copy k with its ids prefixed c<k>- (R divisible by it; default 1)")
    parser.add_argument("--gzip", action="store_true", help="ingest the (generated or copied) JSON or JSON-lines file gzip-compressed (level 1)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--memory-limit-gb", type=float, default=16.0, help="kill a run whose RSS passes this (reported as killed)")
    args = parser.parse_args()

    workdir = args.workdir or Path(os.environ.get("ARENA_BENCH_DIR", "/tmp/arena-bench"))
    workdir.mkdir(parents=True, exist_ok=True)
    shapes = parse_names(args.shapes)
    check_derivable(shapes, [*args.rows, *([args.onto] if args.onto else [])], args.copies, args.gzip, args.models)
    byte_compile()
    results: dict = {"machine_at_start": machine(), "runs": []}

    made = "".join([f" x{args.copies}" if args.copies > 1 else "", " gzip" if args.gzip else ""])

    def timed(n: int, name: str, path: Path, store: Path, label: str) -> None:
        row = {"rows": n, "shape": name + made, "file_mb": path.stat().st_size / 2**20, "data_mb": data_bytes(path) / 2**20, "run": label,
               **ingest(path, store, args.memory_limit_gb * 1024), "load_average": machine()["load_average"]}
        print(json.dumps(row), file=sys.stderr, flush=True)
        results["runs"].append(row)

    bases = {}
    if args.onto:
        # Part k of a file takes the votes of its seed + k: a seed this far off shares no part (nor id) with a --rows file.
        other_votes = default_seed(args.onto, args.models) + 10**9
        base_paths = inputs(shapes, args.onto, args.models, workdir, args.copies, args.gzip, other_votes)
        for name in shapes:
            bases[name] = workdir / f"ingest-base-{name}-{args.onto}"
            shutil.rmtree(bases[name], ignore_errors=True)
            timed(args.onto, name, base_paths[name], bases[name], "fill")
    for n in args.rows:
        paths = inputs(shapes, n, args.models, workdir, args.copies, args.gzip)
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
