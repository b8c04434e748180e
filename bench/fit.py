"""Benchmark of `arena fit` against arena-rank 0.1.1 and a FastChat-style scipy L-BFGS fit.

Every fit runs as a whole process (start-up, reading, fitting, writing), timed with GNU time (wall seconds,
peak RSS), on the same vote log per size, simulated by `arena_cli.simulate` without texts (in parts of a million
votes, the same models in each). All three solve the same objective — arena-rank's defaults: plain
Bradley-Terry, or style control with the four LMArena groups, reweighting and reg = 1.0 on the mean
log-likelihood (``arena fit --compat arena-rank``) — and compute sandwich intervals (not the FastChat fit,
which has none). Scores are compared with a tight-tolerance reference: scipy L-BFGS on the same objective
(gtol 1e-11), computed in this process, untimed.

`arena fit` is timed twice: from a store (votes ingested once beforehand, the cron/CI case) and straight from
the parquet file (which includes validating every row as `arena ingest` does). The package is byte-compiled
first, as a regular install does (arena-rank's install did).

    python bench/fit.py                                   # 100k, 1M, 5M votes x 100, 300 models
    python bench/fit.py --sizes 100000 --models 100       # a quick run
    python bench/fit.py --bootstrap                       # also the bootstrap timings (2 workers)

arena-rank is run by ``--arena-rank-python`` (default /tmp/benchvenv/bin/python): a separate virtualenv with
``pip install 'arena-rank==0.1.1' 'pandas>=2'`` (the ``bench`` extra), never the project's .venv.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import polars as pl

from arena_cli.simulate import GENERATOR_VERSION, STYLE_GROUPS, simulate_in_parts

ROOT = Path(__file__).resolve().parents[1]
ARENA = str(Path(sys.executable).parent / "arena")
GROUPS = {group: list(members) for group, members in STYLE_GROUPS.items()}

ARENA_RANK_SCRIPT = textwrap.dedent('''
    import multiprocessing
    import sys
    import pandas as pd
    from arena_rank.models.bradley_terry import BradleyTerry
    from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
    from arena_rank.utils.data_utils import ContextualPairDataset, PairDataset
    GROUPS = {groups!r}


    def main():
        path, style, out = sys.argv[1:4]
        if style == "none":
            df = pd.read_parquet(path, columns=["model_a", "model_b", "outcome"])
            ds = PairDataset.from_pandas(df, outcome_col="outcome")
            model = BradleyTerry(n_competitors=len(ds.competitors))
        else:
            columns = [f"{{m}}_{{s}}" for ms in GROUPS.values() for m in ms for s in "ab"]
            df = pd.read_parquet(path, columns=["model_a", "model_b", "outcome", *columns])
            for group, members in GROUPS.items():
                a = sum(df[f"{{m}}_a"] for m in members).astype(float)
                b = sum(df[f"{{m}}_b"] for m in members).astype(float)
                df[group] = (a - b) / (a + b + 1.0)
            ds = ContextualPairDataset.from_pandas(df, feature_cols=list(GROUPS), outcome_col="outcome")
            model = ContextualBradleyTerry(n_competitors=len(ds.competitors), n_features=len(GROUPS))
        result = model.compute_ratings_and_cis(ds, significance_level=0.05)
        pd.DataFrame({{"model": result["competitors"], "score": list(map(float, result["ratings"]))}}).to_csv(out, index=False)


    if __name__ == "__main__":
        multiprocessing.set_start_method("spawn")  # arena-rank's bootstrap forks; fork after JAX threads deadlocks
        main()
''').format(groups=GROUPS)


# ------------------------------------------------------------------------------- the shared objective


def load_arrays(path: Path, style: str):
    """Model indices, outcomes (1, 0.5, 0), standardised style matrix and arena-rank's weights."""
    columns = ["model_a", "model_b", "outcome"]
    if style != "none":
        columns += [f"{m}_{s}" for ms in GROUPS.values() for m in ms for s in "ab"]
    frame = pl.read_parquet(path, columns=columns)
    models = pl.concat([frame["model_a"], frame["model_b"]]).unique().sort()
    a = frame["model_a"].cast(pl.Enum(models)).to_physical().to_numpy().astype(np.int64)
    b = frame["model_b"].cast(pl.Enum(models)).to_physical().to_numpy().astype(np.int64)
    y = frame["outcome"].replace_strict({"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "both_bad": 0.5}, return_dtype=pl.Float64).to_numpy()
    X = None
    if style != "none":
        groups = []
        for members in GROUPS.values():
            sa = sum(frame[f"{m}_a"].to_numpy().astype(float) for m in members)
            sb = sum(frame[f"{m}_b"].to_numpy().astype(float) for m in members)
            d = (sa - sb) / (sa + sb + 1.0)
            groups.append((d - d.mean()) / d.std())
        X = np.column_stack(groups)
    return models.to_list(), a, b, y, X


def lbfgs_fit(style: str, models, a, b, y, X, gtol: float, maxiter: int) -> np.ndarray:
    """FastChat's approach (scipy L-BFGS-B on an explicit loss and gradient) on arena-rank's objective."""
    from scipy.optimize import minimize
    from scipy.special import expit

    M = len(models)
    if style == "none":
        keys, counts = np.unique((a * M + b) * 3 + (2 * y).astype(np.int64), return_counts=True)
        a, b, y, w = keys // 3 // M, keys // 3 % M, (keys % 3) / 2.0, counts.astype(float)
        k, reg = 0, 0.0
    else:
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        _, pair, pair_counts = np.unique(lo * M + hi, return_inverse=True, return_counts=True)
        w = 1.0 / np.maximum(pair_counts[pair], 50)
        w /= w.mean()
        k, reg = X.shape[1], 1.0
    total = w.sum()

    def loss_and_grad(theta):
        d = theta[a] - theta[b]
        if k:
            d = d + X @ theta[M:]
        p = expit(d)
        loss = -np.sum(w * (y * d - np.logaddexp(0.0, d))) / total + 0.5 * reg * theta[M:] @ theta[M:]
        r = w * (y - p) / total
        grad = np.zeros_like(theta)
        grad[:M] = -(np.bincount(a, r, minlength=M) - np.bincount(b, r, minlength=M))
        if k:
            grad[M:] = -(X.T @ r) + reg * theta[M:]
        return loss, grad

    result = minimize(loss_and_grad, np.zeros(M + k), jac=True, method="L-BFGS-B",
                      options={"gtol": gtol, "ftol": 1e-15 if gtol < 1e-8 else 2.2e-9, "maxiter": maxiter, "maxcor": 20})
    beta = result.x[:M]
    return 1000.0 + 400.0 / np.log(10.0) * (beta - beta.mean())


def fastchat_main(path: str, style: str, out: str) -> None:
    """The timed FastChat-style fit: FastChat's default tolerances (gtol 1e-6, at most 100 iterations)."""
    models, a, b, y, X = load_arrays(Path(path), style)
    scores = lbfgs_fit(style, models, a, b, y, X, gtol=1e-6, maxiter=100)
    pl.DataFrame({"model": models, "score": scores}).write_csv(out)


# ------------------------------------------------------------------------------------------- running


def timed(command: list[str], repeat: int = 1) -> tuple[float, float]:
    """(median wall seconds, largest peak RSS in MB) of ``repeat`` runs of one whole process."""
    return timed_in_turn({"command": command}, repeat)["command"]


def timed_in_turn(commands: dict[str, list[str]], repeat: int) -> dict[str, tuple[float, float]]:
    """Per command: (median wall seconds, largest peak RSS in MB) of ``repeat`` runs of the whole process.

    The commands run in turn (A B C A B C ...), so that a machine whose speed drifts (a shared host, memory
    the host reclaims between runs) weighs on every tool alike; on such a machine a single run can be off
    by half, the median of a few is not."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    peaks: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            with tempfile.NamedTemporaryFile("r", suffix=".time") as stats:
                run = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", stats.name, *command], capture_output=True, text=True)
                if run.returncode != 0:
                    raise RuntimeError(f"{' '.join(command)} failed:\n{run.stderr[-2000:]}")
                seconds, kilobytes = Path(stats.name).read_text().split()[-2:]
            walls[name].append(float(seconds))
            peaks[name].append(float(kilobytes) / 1024.0)
    return {name: (statistics.median(walls[name]), max(peaks[name])) for name in commands}


def scores_of(path: Path) -> dict[str, float]:
    """Centred scores from a tool's output: `arena fit` JSON (full precision; its CSV rounds for people) or CSV."""
    if path.suffix == ".json":
        frame = pl.DataFrame(json.loads(path.read_text())["tables"]["leaderboard"])
    else:
        frame = pl.read_csv(path)
    values = frame["score"].to_numpy()
    return dict(zip(frame["model"].to_list(), values - values.mean()))


def max_gap(scores: dict[str, float], reference: dict[str, float]) -> float:
    return max(abs(scores[m] - reference[m]) for m in reference)


def prepare_inputs(workdir: Path, n: int, n_models: int) -> tuple[Path, Path]:
    """The vote log (parquet) and a store with the same votes, both cached in ``workdir``."""
    path = workdir / f"votes-{n}-{n_models}-sim{GENERATOR_VERSION}.parquet"
    if not path.exists():  # `arena simulate --no-texts` with its default truth, as the frame a fit reads
        parts = []
        for k, sim in enumerate(simulate_in_parts(n, n_models, n + n_models, texts=False)):
            parts.append(workdir / f"{path.stem}.part{k}.parquet")
            sim.features().write_parquet(parts[-1])
        pl.scan_parquet(parts).sink_parquet(path)
        for part in parts:
            part.unlink()
    store = workdir / f"store-{n}-{n_models}-sim{GENERATOR_VERSION}"
    if not (store / "manifest.json").exists():
        subprocess.run([ARENA, "ingest", str(path), "--store", str(store)], check=True, capture_output=True)
    return path, store


def bench_fits(args, workdir: Path) -> list[dict]:
    rows = []
    for n in args.sizes:
        for n_models in args.models:
            path, store = prepare_inputs(workdir, n, n_models)
            for style in ("none", "both"):
                arrays = load_arrays(path, style)
                reference = dict(zip(arrays[0], lbfgs_fit(style, *arrays, gtol=1e-11, maxiter=20000) - 1000.0))
                del arrays  # the timed processes get the memory
                runs = {
                    "arena fit (store)": [ARENA, "fit", "--store", str(store)],
                    "arena fit (file)": [ARENA, "fit", str(path)] if n <= args.file_limit else None,
                    "arena-rank 0.1.1": [args.arena_rank_python, str(workdir / "arena_rank_fit.py"), str(path), style] if Path(args.arena_rank_python).exists() else None,
                    "FastChat-style L-BFGS": [sys.executable, __file__, "--fastchat", str(path), style],
                }
                outputs = {}
                for tool, command in list(runs.items()):
                    if command is None:
                        del runs[tool]
                        continue
                    out = workdir / (f"out-{len(outputs)}.json" if tool.startswith("arena fit") else f"out-{len(outputs)}.csv")
                    extra = ["--style", style, "--compat", "arena-rank", "-o", str(out)] if tool.startswith("arena fit") else [str(out)]
                    runs[tool], outputs[tool] = [*command, *extra], out
                for tool, (seconds, rss) in timed_in_turn(runs, args.repeat).items():
                    gap = max_gap(scores_of(outputs[tool]), reference)
                    row = {"votes": n, "models": n_models, "style": style, "tool": tool, "seconds": seconds, "rss_mb": rss, "max_score_diff": gap}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    return rows


def bench_bootstrap(args, workdir: Path) -> list[dict]:
    """Bootstrap timings at 1M votes and 100 models on all cores (parent-process RSS)."""
    path, store = prepare_inputs(workdir, 1_000_000, 100)
    rows = []
    for style, rounds in (("none", 1000), ("both", 100)):
        out = workdir / "boot.json"
        command = [ARENA, "fit", "--store", str(store), "--style", style, "--ci", "bootstrap", "--rounds", str(rounds), "-o", str(out)]
        seconds, rss = timed(command, args.repeat)
        fit_only, _ = timed([ARENA, "fit", "--store", str(store), "--style", style, "--ci", "none", "-o", str(out)], args.repeat)
        row = {"votes": 1_000_000, "models": 100, "style": style, "rounds": rounds, "seconds": seconds, "seconds_without_bootstrap": fit_only, "rss_mb": rss}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.arena_rank_bootstrap and Path(args.arena_rank_python).exists():
        script = workdir / "arena_rank_boot.py"
        script.write_text(ARENA_RANK_SCRIPT.replace("significance_level=0.05)", f"significance_level=0.05, ci_method='bootstrap', num_bootstrap={args.arena_rank_bootstrap})"))
        n = args.arena_rank_bootstrap_votes
        small, small_store = prepare_inputs(workdir, n, 100)
        seconds, rss = timed([args.arena_rank_python, str(script), str(small), "both", str(workdir / "out.csv")])
        ours, _ = timed([ARENA, "fit", "--store", str(small_store), "--style", "both", "--compat", "arena-rank", "--ci", "bootstrap", "--rounds", str(args.arena_rank_bootstrap), "-o", str(workdir / "o.json")])
        row = {"votes": n, "models": 100, "style": "both", "rounds": args.arena_rank_bootstrap, "arena_rank_seconds": seconds, "arena_fit_seconds": ours, "arena_rank_rss_mb": rss}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def report(fits: list[dict]) -> str:
    """Markdown: per size and style, each tool's time, ratio to arena-rank, RSS and score gap."""
    lines = ["| votes | models | style | tool | wall s | vs arena-rank | peak RSS MB | max score diff |", "|---:|---:|---|---|---:|---:|---:|---:|"]
    for row in fits:
        base = next((r for r in fits if (r["votes"], r["models"], r["style"], r["tool"]) == (row["votes"], row["models"], row["style"], "arena-rank 0.1.1")), None)
        ratio = f"{base['seconds'] / row['seconds']:.1f}x faster" if base and row["tool"] != base["tool"] else ""
        lines.append(f"| {row['votes']:,} | {row['models']} | {row['style']} | {row['tool']} | {row['seconds']:.2f} | {ratio} | {row['rss_mb']:.0f} | {row['max_score_diff']:.4f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,5000000", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--models", default="100,300", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--arena-rank-python", default="/tmp/benchvenv/bin/python")
    parser.add_argument("--workdir", default=os.environ.get("ARENA_BENCH_DIR", "/tmp/arena-bench"))
    parser.add_argument("--file-limit", type=int, default=5_000_000, help="time `arena fit FILE` only up to this many votes")
    parser.add_argument("--bootstrap", action="store_true", help="also time the bootstrap at 1M votes")
    parser.add_argument("--arena-rank-bootstrap", type=int, default=0, help="rounds of arena-rank's style bootstrap to time (0: skip)")
    parser.add_argument("--arena-rank-bootstrap-votes", type=int, default=100_000)
    parser.add_argument("--no-fits", action="store_true", help="skip the point-fit comparison")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing; the median wall time is reported")
    args = parser.parse_args()
    # as a regular install does (an editable one does not, and PYTHONDONTWRITEBYTECODE stops the first run
    # from doing it): otherwise every timed run of `arena` would compile its modules again, ~40 ms each
    compileall.compile_dir(ROOT / "arena_cli", quiet=1)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "arena_rank_fit.py").write_text(ARENA_RANK_SCRIPT)
    start = time.perf_counter()
    results = {"cores": len(os.sched_getaffinity(0)), "load_average_at_start": os.getloadavg()}
    if not args.no_fits:
        results["fits"] = bench_fits(args, workdir)
        print(report(results["fits"]))
    if args.bootstrap:
        results["bootstrap"] = bench_bootstrap(args, workdir)
    results["load_average_at_end"] = os.getloadavg()
    results["bench_seconds"] = time.perf_counter() - start
    (workdir / "results.json").write_text(json.dumps(results, indent=2))
    print(f"results in {workdir / 'results.json'}")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--fastchat":
        fastchat_main(*sys.argv[2:])
    else:
        main()
