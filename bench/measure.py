"""Running and measuring whole processes, for every bench: wall time and the process's own peak RSS."""

from __future__ import annotations

import compileall
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: This checkout's `arena` (run from its root, so the package imported is this one, not an installed copy).
ARENA = [sys.executable, "-m", "arena_cli"]


@dataclass(frozen=True)
class Run:
    seconds: float  # nan when killed
    rss_mb: float
    stdout: str
    killed: bool = False


def _tree_rss_mb(pid: int) -> float:
    """The RSS of a process and all its descendants (0 for those that are gone)."""
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            with open(f"/proc/{current}/statm") as statm:
                total += int(statm.read().split()[1]) * 4096
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    pending += [int(child) for child in children.read().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / 2**20


def run(command: list[str], limit_mb: float | None = None) -> Run:
    """One whole process under GNU time: its wall seconds and peak RSS (the process's own, not its parent's
    at fork), from the checkout's root. Above ``limit_mb`` of RSS it is killed (so that a run cannot take a
    shared machine's memory) and reported as such, as is a run the kernel killed for memory; any other
    failure stops the bench."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as stats, tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(["/usr/bin/time", "-f", "%e %M", "-o", stats.name, *command], stdout=out, stderr=err, text=True,
                                 cwd=ROOT, start_new_session=True)
        while child.poll() is None:
            if limit_mb is not None and _tree_rss_mb(child.pid) > limit_mb:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                return Run(math.nan, limit_mb, "", killed=True)
            time.sleep(0.1)
        out.seek(0)
        err.seek(0)
        report = Path(stats.name).read_text()
        seconds, kilobytes = report.split()[-2:]
        if "terminated by signal 9" in report:  # the kernel's out-of-memory killer: a result, not a bench failure
            return Run(math.nan, float(kilobytes) / 1024.0, "", killed=True)
        if child.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed (exit {child.returncode}):\n{err.read()[-3000:]}")
        return Run(float(seconds), float(kilobytes) / 1024.0, out.read())


def timed_in_turn(commands: dict[str, list[str]], repeat: int, limit_mb: float | None = None) -> dict[str, tuple[float, float]]:
    """Per command: (median wall seconds, largest peak RSS in MB) of ``repeat`` runs of the whole process; a
    command killed above ``limit_mb`` is not run again and has nan seconds.

    The commands run in turn (A B C A B C ...), so that a machine whose speed drifts (a shared host, memory
    the host reclaims between runs) weighs on every tool alike; on such a machine a single run can be off
    by half, the median of a few is not."""
    runs: dict[str, list[Run]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():
            if not any(r.killed for r in runs[name]):
                runs[name].append(run(command, limit_mb))
    return {name: (math.nan if any(r.killed for r in done) else statistics.median(r.seconds for r in done), max(r.rss_mb for r in done))
            for name, done in runs.items()}


def byte_compile() -> None:
    """Compile the package as a regular install does (an editable one does not, and where
    PYTHONDONTWRITEBYTECODE is set every timed run would compile its modules again, ~40 ms)."""
    compileall.compile_dir(ROOT / "arena_cli", quiet=1)


def machine() -> dict:
    return {"cores": len(os.sched_getaffinity(0)), "load_average": [round(x, 2) for x in os.getloadavg()]}
