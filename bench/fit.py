"""Benchmark of `arena fit` on the shapes users' vote logs have, against the read floor, arena-rank 0.1.1 and
FastChat's recipe.

For each size, shape (bench/shapes.py: the same simulated votes as the LMArena release's nested parquet,
FastChat's JSONL and JSON dumps, flat count columns, conversations with realistic texts, ...) and style
(``none``, ``both``), these run as whole processes, timed in turn (A B C A B C ...; median wall time, largest
peak RSS, bench/measure.py):

* `arena fit` straight from the file; from a store the file was ingested into beforehand; and, for style, from
  a copy of that store whose features `arena features` computed (``--recipe lmarena``), the cron/CI cases;
* the read floor of each (bench/floor.py: polars reading only the columns the fit needs, among them a file's
  battle ids, which a fit reads to drop duplicate votes), which `arena fit` cannot beat;
* arena-rank 0.1.1 and FastChat's recipe on the file, read with pandas as their users do (bench/baselines.py,
  in a separate virtualenv), where the file has what they need (style counts for a style fit).

All solve one objective, arena-rank's defaults (``arena fit --compat arena-rank``, here with ``--ci none``; arena-
rank computes its sandwich intervals too); each tool's scores are compared with a tight-tolerance reference
(scipy L-BFGS, gtol 1e-11, on the flat counts of the same votes, untimed; up to ``--check-limit`` votes).
Reported per row: ``x floor`` (time / the read floor of the same input), ``x flat`` (time / the same fit of the
flat-column file: ``flat-parquet-hub`` for a hub-written file when the run has it, the same writer's layout of
the same votes; else ``flat-parquet``) and, on the file fit, arena-rank's time / arena fit's.

    python bench/fit.py                                             # 1M votes x 300 models, every shape
    python bench/fit.py --shapes nested-parquet,flat-parquet --repeat 5
    python bench/fit.py --shapes texts-meta-parquet,texts-jsonl --sizes 100000
    python bench/fit.py --growth                                    # nested parquet at 1M, 10M, 100M votes
    python bench/fit.py --bootstrap --no-fits                       # bootstrap timings

Inputs and stores are cached in ``--workdir`` (``$ARENA_BENCH_DIR``, default /tmp/arena-bench); results go to
its ``results.json``. The baselines' virtualenv (``--baselines-python``, default /tmp/benchvenv/bin/python):
``python3 -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install 'arena-rank==0.1.1' 'pandas>=2' pyarrow``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from measure import ARENA, Run, byte_compile, machine, run, timed_in_turn
from objective import FLAT_GROUPS, OUTCOMES, fit_scores, style_matrix
from shapes import BASELINES_PYTHON, DEFAULT_SHAPES, SHAPES, Shape, ensure, flat, parse_names, reference_path

HERE = Path(__file__).resolve().parent
FLOOR = [sys.executable, str(HERE / "floor.py")]
ARENA_RANK = "arena-rank 0.1.1"
FASTCHAT = "FastChat recipe"
GROWTH_SIZES = [1_000_000, 10_000_000, 100_000_000]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------ reference


def reference_scores(path: Path, style: str) -> dict[str, float]:
    """Centred scores of the shared objective at a tight tolerance, from a flat file's counts."""
    columns = ["model_a", "model_b", "outcome"]
    if style != "none":
        columns += [f"{m}_{s}" for ms in FLAT_GROUPS.values() for m in ms for s in "ab"]
    frame = pl.read_parquet(path, columns=columns)
    models = pl.concat([frame["model_a"], frame["model_b"]]).unique().sort()
    a, b = (frame[c].cast(pl.Enum(models)).to_physical().to_numpy().astype(np.int64) for c in ("model_a", "model_b"))
    y = frame["outcome"].replace_strict(OUTCOMES, default=0.5, return_dtype=pl.Float64).to_numpy()
    X = None
    if style != "none":
        X = style_matrix([tuple(sum(frame[f"{m}_{s}"].to_numpy().astype(float) for m in ms) for s in "ab") for ms in FLAT_GROUPS.values()])
    scores = fit_scores(style, len(models), a, b, y, X, gtol=1e-11, maxiter=20000) - 1000.0
    return dict(zip(models.to_list(), scores))


def scores_of(path: Path) -> dict[str, float]:
    """Centred scores from a tool's output: `arena fit` JSON (full precision; its CSV rounds for people) or CSV."""
    frame = pl.DataFrame(json.loads(path.read_text())["tables"]["leaderboard"]) if path.suffix == ".json" else pl.read_csv(path)
    values = frame["score"].to_numpy()
    return dict(zip(frame["model"].to_list(), values - values.mean()))


def max_gap(scores: dict[str, float], reference: dict[str, float]) -> float:
    return max(abs(scores.get(m, np.inf) - reference[m]) for m in reference)


# ------------------------------------------------------------------------------------------------ inputs


def counts_of(shape: Shape) -> str:
    """Where a shape keeps the style counts, as bench/floor.py and bench/baselines.py name it."""
    return shape.counts or "texts"


def stores_for(path: Path, workdir: Path, with_features: bool) -> tuple[tuple[Path, Path | None], dict[str, Run]]:
    """A store the file was ingested into and, with ``with_features``, a copy of it with `arena features` run
    (lmarena recipe); both cached, each made under a temporary name and renamed when whole. With them, the runs
    of `arena ingest` and `arena features` that made them this time (a store made before is not timed)."""
    made: dict[str, Run] = {}
    store = workdir / f"store-{path.stem}"
    if not (store / "manifest.json").exists():
        log(f"ingesting {path.name} ...")
        partial = store.with_name(store.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        made["arena ingest"] = run([*ARENA, "ingest", str(path), "--store", str(partial)])
        partial.rename(store)
    if not with_features:
        return (store, None), made
    featured = workdir / f"store-features-{path.stem}"
    if not (featured / "manifest.json").exists():
        log(f"computing the features of {store.name} ...")
        partial = featured.with_name(featured.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(store, partial)
        made["arena features"] = run([*ARENA, "features", "--store", str(partial), "--recipe", "lmarena"])
        partial.rename(featured)
    return (store, featured), made


def commands(shape: Shape, path: Path, style: str, sources: list[str], stores: tuple[Path | None, Path | None],
             baselines: str | None, outdir: Path) -> dict[tuple[str, str], tuple[list[str], Path | None]]:
    """(source, tool) -> (command, the scores file it writes or None)."""
    options = ["--style", style, "--compat", "arena-rank", "--ci", "none", *(["--recipe", "lmarena"] if style != "none" else [])]
    inputs = {"file": ([str(path)], "file", path), "store": (["--store", str(stores[0])], "store", stores[0]),
              "store+features": (["--store", str(stores[1])], "features", stores[1])}
    chosen: dict[tuple[str, str], tuple[list[str], Path | None]] = {}
    for source in sources:
        if source == "store+features" and style == "none":
            continue
        given, floor_kind, floor_path = inputs[source]
        out = outdir / f"arena-{source}.json"
        chosen[source, "arena fit"] = ([*ARENA, "fit", *given, *options, "-o", str(out)], out)
        chosen[source, "read floor"] = ([*FLOOR, floor_kind, str(floor_path), style, counts_of(shape), shape.ids], None)
    if baselines and "file" in sources and (style == "none" or shape.counts is not None):
        for tool, name in ((ARENA_RANK, "arena-rank"), (FASTCHAT, "fastchat")):
            out = outdir / f"{name}.csv"
            chosen["file", tool] = ([baselines, str(HERE / "baselines.py"), name, str(path), style, shape.counts or "none", str(out)], out)
    return chosen


# ------------------------------------------------------------------------------------------------ benches


def bench_fits(args, workdir: Path, shapes: list[str], sizes: list[int], baselines: str | None) -> list[dict]:
    rows = []
    outdir = workdir / "out"
    outdir.mkdir(exist_ok=True)
    for n in sizes:
        paths = ensure(shapes, n, args.models, workdir, log=log, pyarrow_python=args.baselines_python)
        for name in shapes:
            shape, path = SHAPES[name], paths[name]
            needs_features = "store+features" in args.sources and "both" in args.styles
            stores: tuple[Path | None, Path | None] = (None, None)
            if {"store", "store+features"} & set(args.sources):
                stores, made = stores_for(path, workdir, needs_features)
                for tool, done in made.items():  # once, when the store is made: no repeats, no reference
                    row = {"votes": n, "models": args.models, "shape": name, "style": "", "source": "store", "tool": tool,
                           "seconds": done.seconds, "rss_mb": round(done.rss_mb), "max_score_diff": None, "load_average": machine()["load_average"]}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
            for style in args.styles:
                reference = reference_scores(reference_path(name, n, args.models, workdir), style) if n <= args.check_limit else None
                chosen = commands(shape, path, style, args.sources, stores, baselines, outdir)
                log(f"{n:,} votes, {name}, style {style}: {len(chosen)} commands x {args.repeat} ...")
                load = machine()["load_average"]
                timings = timed_in_turn({f"{s}|{t}": c for (s, t), (c, _) in chosen.items()}, args.repeat, args.memory_limit_gb * 1024)
                for (source, tool), (_, out) in chosen.items():
                    seconds, rss = timings[f"{source}|{tool}"]
                    gap = max_gap(scores_of(out), reference) if reference is not None and out is not None and seconds == seconds else None
                    row = {"votes": n, "models": args.models, "shape": name, "style": style, "source": source, "tool": tool,
                           "seconds": seconds, "rss_mb": round(rss), "max_score_diff": gap, "load_average": load}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    return rows


def bench_bootstrap(args, workdir: Path, baselines: str | None) -> list[dict]:
    """Bootstrap timings at 1M votes and 100 models (flat columns, from a store) on all cores (parent-process RSS),
    and arena-rank's style bootstrap on a smaller log."""
    n, n_models = 1_000_000, 100
    path = ensure(["flat-parquet"], n, n_models, workdir, log=log)["flat-parquet"]
    store, _ = stores_for(path, workdir, with_features=False)
    out = str(workdir / "out" / "boot.json")
    rows = []
    for style, rounds in (("none", 1000), ("both", 100)):
        fit = [*ARENA, "fit", "--store", str(store), "--style", style, "-o", out]
        timings = timed_in_turn({"bootstrap": [*fit, "--ci", "bootstrap", "--rounds", str(rounds)], "point": [*fit, "--ci", "none"]}, args.repeat)
        row = {"votes": n, "models": n_models, "style": style, "rounds": rounds, "seconds": timings["bootstrap"][0],
               "seconds_without_bootstrap": timings["point"][0], "rss_mb": round(timings["bootstrap"][1])}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.arena_rank_bootstrap and baselines:
        small = args.arena_rank_bootstrap_votes
        path = ensure(["flat-parquet"], small, n_models, workdir, log=log)["flat-parquet"]
        store, _ = stores_for(path, workdir, with_features=False)
        boot = str(args.arena_rank_bootstrap)
        theirs = run([baselines, str(HERE / "baselines.py"), "arena-rank", str(path), "both", "flat", str(workdir / "out" / "boot.csv"), boot])
        ours = run([*ARENA, "fit", "--store", str(store), "--style", "both", "--compat", "arena-rank", "--ci", "bootstrap", "--rounds", boot, "-o", out])
        row = {"votes": small, "models": n_models, "style": "both", "rounds": args.arena_rank_bootstrap,
               "arena_rank_seconds": theirs.seconds, "arena_fit_seconds": ours.seconds, "arena_rank_rss_mb": round(theirs.rss_mb)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------------ reports


def _find(rows: list[dict], **match) -> dict | None:
    return next((r for r in rows if all(r[k] == v for k, v in match.items())), None)


def _seconds(row: dict) -> str:
    return "killed" if row["seconds"] != row["seconds"] else f"{row['seconds']:.2f}"


def _rss(row: dict) -> str:
    return f"> {row['rss_mb']:,}" if row["seconds"] != row["seconds"] else f"{row['rss_mb']:,}"


#: The flat-column file of the same votes written as a shape is (see bench/shapes.py).
FLAT_OF = {"nested-parquet-hub": "flat-parquet-hub", "nested-parquet-pyarrow": "flat-parquet-pyarrow"}


def report(rows: list[dict]) -> str:
    """Markdown: per size, shape, style and source, each tool's time, peak RSS, its ratios and score gap.

    ``floor x flat floor``, on a read floor's row: that floor over the read floor of the same votes as flat columns
    (F over F_flat). It bounds what the other two ratios can be together: a fit that reads each file as fast as its
    floor and then does the same work X (the same votes, so the same fit) has x floor = (F + X) / F and x flat =
    (F + X) / (F_flat + X); x floor ≤ 2 needs X ≤ F, x flat ≤ 1.2 needs X ≥ 5F − 6F_flat, and both hold for some
    X only when F ≤ 1.5 F_flat (or when the fit reads faster than its floor: it decodes a struct with pyarrow)."""
    lines = ["| votes | shape | style | source | tool | wall s | peak RSS MB | x floor | x flat | floor x flat floor | arena-rank / this | max score diff |",
             "|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        key = {k: row[k] for k in ("votes", "models", "style")}
        floor = _find(rows, **key, shape=row["shape"], source=row["source"], tool="read floor")
        # the same votes as flat columns, written by the same writer when the run has them (hub: 1,000-row row groups; pyarrow: one)
        flat_shape = next((s for s in (FLAT_OF.get(row["shape"], ""), "flat-parquet") if _find(rows, **key, shape=s, source=row["source"], tool="arena fit")), "")
        same_votes_flat = _find(rows, **key, shape=flat_shape, source=row["source"], tool="arena fit")
        flat_floor = _find(rows, **key, shape=flat_shape, source=row["source"], tool="read floor")
        theirs = _find(rows, **key, shape=row["shape"], source="file", tool=ARENA_RANK)
        ours = row["tool"] == "arena fit"
        timed = lambda other: other is not None and other["seconds"] == other["seconds"] and other["seconds"] > 0  # noqa: E731
        ratio = lambda base: f"{row['seconds'] / base['seconds']:.2f}" if ours and timed(row) and timed(base) else ""  # noqa: E731
        speedup = f"{theirs['seconds'] / row['seconds']:.1f}" if ours and row["source"] == "file" and timed(row) and timed(theirs) else ""
        gap = "" if row["max_score_diff"] is None else f"{row['max_score_diff']:.4f}"
        of_flat = SHAPES[row["shape"]].layout is not flat
        floors = f"{row['seconds'] / flat_floor['seconds']:.2f}" if of_flat and row["tool"] == "read floor" and timed(row) and timed(flat_floor) else ""
        lines.append(f"| {row['votes']:,} | {row['shape']} | {row['style']} | {row['source']} | {row['tool']} | {_seconds(row)} | "
                     f"{_rss(row)} | {ratio(floor)} | {ratio(same_votes_flat) if of_flat else ''} | {floors} | {speedup} | {gap} |")
    return "\n".join(lines)


def growth_report(rows: list[dict]) -> str:
    """Markdown: per style, source and tool, time and peak RSS at each size, and their ratios to the size before."""
    sizes = sorted({r["votes"] for r in rows})
    header = " | ".join(f"{n:,}: s, MB" + ("" if i == 0 else f", x s, x MB") for i, n in enumerate(sizes))
    lines = [f"| shape | style | source | tool | {header} |", "|---|---|---|---|" + "---:|" * len(sizes)]
    for key in dict.fromkeys((r["shape"], r["style"], r["source"], r["tool"]) for r in rows):
        cells, before = [], None
        for n in sizes:
            row = _find(rows, votes=n, shape=key[0], style=key[1], source=key[2], tool=key[3])
            cell = "" if row is None else f"{_seconds(row)}, {_rss(row)}"
            if row and before:
                cell += f", {row['seconds'] / before['seconds']:.1f}, {row['rss_mb'] / before['rss_mb']:.1f}"
            cells.append(cell)
            before = row
        lines.append(f"| {' | '.join(key)} | {' | '.join(cells)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    parser.add_argument("--shapes", default=None, help=f"comma list (default: all: {', '.join(DEFAULT_SHAPES)}; nested-parquet with --growth)")
    parser.add_argument("--sizes", default=None, type=ints, help="votes, comma list (default 1000000; 1M,10M,100M with --growth)")
    parser.add_argument("--models", default=300, type=int)
    parser.add_argument("--styles", default="none,both", type=lambda s: s.split(","))
    parser.add_argument("--sources", default="file,store,store+features", type=lambda s: s.split(","), help="file, store, store+features")
    parser.add_argument("--growth", action="store_true", help="time and memory growth: nested parquet, arena fit and its floor only")
    parser.add_argument("--baselines-python", default=BASELINES_PYTHON, help="python with arena-rank, pandas, pyarrow")
    parser.add_argument("--no-baselines", action="store_true", help="skip arena-rank and FastChat's recipe")
    parser.add_argument("--check-limit", type=int, default=10_000_000, help="compare scores with the reference up to this many votes")
    parser.add_argument("--workdir", default=None, type=Path, help="inputs, stores and results (default $ARENA_BENCH_DIR or /tmp/arena-bench)")
    parser.add_argument("--bootstrap", action="store_true", help="also time the bootstrap at 1M votes")
    parser.add_argument("--arena-rank-bootstrap", type=int, default=0, help="rounds of arena-rank's style bootstrap to time (0: skip)")
    parser.add_argument("--arena-rank-bootstrap-votes", type=int, default=100_000)
    parser.add_argument("--no-fits", action="store_true", help="skip the fit comparison")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing; the median wall time is reported")
    parser.add_argument("--memory-limit-gb", type=float, default=16.0, help="kill a run whose RSS passes this (reported as killed)")
    args = parser.parse_args()
    workdir = args.workdir or Path(os.environ.get("ARENA_BENCH_DIR", "/tmp/arena-bench"))
    workdir.mkdir(parents=True, exist_ok=True)
    shapes = parse_names(args.shapes or ("nested-parquet" if args.growth else "all"))
    sizes = args.sizes or (GROWTH_SIZES if args.growth else [1_000_000])
    baselines = args.baselines_python if not (args.no_baselines or args.growth) and Path(args.baselines_python).exists() else None
    if baselines is None and not (args.no_baselines or args.growth):
        log(f"no {args.baselines_python}: arena-rank and FastChat's recipe are skipped")
    byte_compile()
    start = time.perf_counter()
    results: dict = {"machine_at_start": machine(), "args": {k: str(v) for k, v in vars(args).items()}}
    if not args.no_fits:
        results["fits"] = bench_fits(args, workdir, shapes, sizes, baselines)
        print(growth_report(results["fits"]) if args.growth else report(results["fits"]))
    if args.bootstrap:
        results["bootstrap"] = bench_bootstrap(args, workdir, baselines)
    results["machine_at_end"] = machine()
    results["bench_seconds"] = time.perf_counter() - start
    name = "results-growth.json" if args.growth else "results.json"
    (workdir / name).write_text(json.dumps(results, indent=2))
    log(f"results in {workdir / name}; load average at start {results['machine_at_start']['load_average']}, at end {results['machine_at_end']['load_average']}")


if __name__ == "__main__":
    main()
