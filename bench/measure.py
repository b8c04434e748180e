"""Running and measuring whole processes, for every bench: wall time and the process's own peak RSS."""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: This checkout's `arena` (run from its root, so the package imported is this one, not an installed copy).
ARENA = [sys.executable, "-m", "arena_cli"]


@dataclass(frozen=True)
class Run:
    seconds: float
    rss_mb: float
    stdout: str


def run(command: list[str]) -> Run:
    """One whole process under GNU time: its wall seconds and peak RSS (the process's own, not its parent's
    at fork), from the checkout's root. A failure stops the bench."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as stats:
        done = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", stats.name, *command], capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        seconds, kilobytes = Path(stats.name).read_text().split()[-2:]
    return Run(float(seconds), float(kilobytes) / 1024.0, done.stdout)


def timed_in_turn(commands: dict[str, list[str]], repeat: int) -> dict[str, tuple[float, float]]:
    """Per command: (median wall seconds, largest peak RSS in MB) of ``repeat`` runs of the whole process.

    The commands run in turn (A B C A B C ...), so that a machine whose speed drifts (a shared host, memory
    the host reclaims between runs) weighs on every tool alike; on such a machine a single run can be off
    by half, the median of a few is not."""
    runs: dict[str, list[Run]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            runs[name].append(run(command))
    return {name: (statistics.median(r.seconds for r in done), max(r.rss_mb for r in done)) for name, done in runs.items()}


def byte_compile() -> None:
    """Compile the package as a regular install does (an editable one does not, and where
    PYTHONDONTWRITEBYTECODE is set every timed run would compile its modules again, ~40 ms)."""
    compileall.compile_dir(ROOT / "arena_cli", quiet=1)


def machine() -> dict:
    return {"cores": len(os.sched_getaffinity(0)), "load_average": [round(x, 2) for x in os.getloadavg()]}
