"""Single-threaded BLAS while the engine runs.

The engine's dense algebra is small — one (models + features)² system per Newton step — and OpenBLAS's worker
threads only cost there: when the cores are busy (always, once bootstrap workers occupy every core, and often
on shared CI machines) a 100×100 solve handed to a thread that is not scheduled stalls for tens of
milliseconds. ``OPENBLAS_NUM_THREADS`` acts only before numpy loads, so the thread count is set through
OpenBLAS's own functions, found among the libraries loaded in this process (Linux; elsewhere nothing
changes), and restored afterwards.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: (set, get) symbol names of the OpenBLAS builds numpy and scipy ship, and of a system OpenBLAS.
_SYMBOLS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
)


def _controls() -> list[tuple[Callable[[int], None], Callable[[], int]]]:
    """(set, get) thread-count functions of every OpenBLAS loaded in this process."""
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line})
    except OSError:
        return []
    found = []
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for set_name, get_name in _SYMBOLS:
            if hasattr(library, set_name) and hasattr(library, get_name):
                found.append((getattr(library, set_name), getattr(library, get_name)))
                break
    return found


def use_one_thread() -> None:
    """For processes of our own (bootstrap workers): BLAS single-threaded from now on."""
    for set_threads, _ in _controls():
        set_threads(1)


@contextmanager
def single_threaded() -> Iterator[None]:
    """BLAS single-threaded inside the block, as it was before afterwards."""
    controls = _controls()
    saved = [get_threads() for _, get_threads in controls]
    for set_threads, _ in controls:
        set_threads(1)
    try:
        yield
    finally:
        for (set_threads, _), threads in zip(controls, saved):
            set_threads(threads)
