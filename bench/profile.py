"""Where one `arena` command spends its time and memory: the command runs in this process while a thread samples,
every few milliseconds, the process's RSS and the main thread's stack (native work, polars and numpy, shows as
the Python line that called it).

    python bench/profile.py fit votes.parquet --style both --ci none
    python bench/profile.py --interval 0.005 --top 25 ingest votes.jsonl --store /tmp/s

Prints, per arena_cli function (file:function) on the stack: the share of samples it was on (inclusive time),
the share where it was the innermost arena_cli frame (self time), and the largest RSS seen while it was the
innermost one, with the RSS growth attributed to it (the sum of increases between consecutive samples); then
the RSS timeline's peak and the stack at the peak. Run from the checkout's root (this checkout's package).
"""

from __future__ import annotations

import argparse
import collections
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = str(ROOT / "arena_cli")


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


def arena_frames(frame) -> list[str]:
    """The stack's arena_cli frames, innermost first, as ``path:function:line``."""
    names = []
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith(PACKAGE):
            names.append(f"{Path(code.co_filename).relative_to(ROOT)}:{code.co_name}:{frame.f_lineno}")
        frame = frame.f_back
    return names


class Sampler(threading.Thread):
    def __init__(self, interval: float):
        super().__init__(daemon=True)
        self.interval, self.main = interval, threading.main_thread().ident or 0
        self.samples: list[tuple[float, float, list[str]]] = []
        self.done = threading.Event()

    def run(self) -> None:
        start = time.perf_counter()
        while not self.done.is_set():
            frame = sys._current_frames().get(self.main)
            self.samples.append((time.perf_counter() - start, rss_mb(), arena_frames(frame)))
            time.sleep(self.interval)


def summary(samples: list[tuple[float, float, list[str]]], top: int) -> str:
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    peak: dict[str, float] = {}
    growth: collections.defaultdict[str, float] = collections.defaultdict(float)
    before = samples[0][1] if samples else 0.0
    for _, rss, frames in samples:
        functions = [f.rsplit(":", 1)[0] for f in frames]
        inner = functions[0] if functions else "(outside arena_cli: start-up, imports, exit)"
        for function in set(functions):
            inclusive[function] += 1
        own[inner] += 1
        peak[inner] = max(peak.get(inner, 0.0), rss)
        growth[inner] += max(rss - before, 0.0)
        before = rss
    n = max(len(samples), 1)
    lines = [f"{len(samples)} samples over {samples[-1][0]:.2f} s" if samples else "no samples",
             "| function | inclusive % | self % | peak RSS MB while innermost | RSS growth MB |", "|---|---:|---:|---:|---:|"]
    for function, count in own.most_common(top):
        lines.append(f"| {function} | {100 * inclusive[function] / n:.0f} | {100 * count / n:.0f} | {peak[function]:,.0f} | {growth[function]:,.0f} |")
    lines += ["", "inclusive time of the outer functions:"]
    lines += [f"  {100 * count / n:5.1f}%  {function}" for function, count in inclusive.most_common(top) if function not in dict(own.most_common(top))]
    lines_own = collections.Counter(frames[0] if frames else "(outside arena_cli)" for _, _, frames in samples)
    lines += ["", "innermost arena_cli lines:"]
    lines += [f"  {100 * count / n:5.1f}%  {line}" for line, count in lines_own.most_common(top)]
    if samples:
        at, rss, frames = max(samples, key=lambda s: s[1])
        lines += ["", f"peak RSS {rss:,.0f} MB at {at:.2f} s, stack (innermost first):", *[f"  {f}" for f in frames]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=0.01, help="seconds between samples")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the arena command and its arguments")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from arena_cli.cli import app

    sampler = Sampler(args.interval)
    sampler.start()
    try:
        app(args.command, prog_name="arena", standalone_mode=False)
    finally:
        sampler.done.set()
        sampler.join()
        print(summary(sampler.samples, args.top), file=sys.stderr)


if __name__ == "__main__":
    main()
