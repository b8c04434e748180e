"""Streamed reads of JSON lines (:mod:`arena_cli.io.streamed_jsonl`): a lean read of a JSONL log gives exactly the
battles, quarantine and counts of the batch path, whatever the lines hold, and it is the path taken for the logs
tools write.

The batch path's own answer is had by taking the streamed read away (it then answers "read by the batch path").
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import subprocess
import sys

import polars as pl
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from arena_cli import api
from arena_cli.cli import app
from arena_cli.errors import InputError, NoDataError
from arena_cli.io import reading, streamed_jsonl
from arena_cli.io.array_lines import array_lines
from arena_cli.io.options import InputOptions, Source
from arena_cli.io.reading import read_sources
from arena_cli.io.readers import read_json_array
from arena_cli.io.results import ReadPath
from arena_cli.schema import META_COLUMNS

PLAIN = ["model_a", "model_b", "outcome", "weight"]
#: What a style fit of LMArena's counts reads (and ``turn`` and ``timestamp``, to see their values).
STYLED = [*PLAIN, "turn", "timestamp", "tokens_a", "tokens_b", "conversation_a", "conversation_b", *META_COLUMNS]
MODELS = ["gpt-4", "claude-3", "llama-3-70b", "gemini-pro", "mistral-large"]
WINNERS = ["model_a", "model_b", "tie", "tie (bothbad)"]


def _meta(draw_count):
    side = lambda s: {  # noqa: E731
        f"sum_assistant_{s}_tokens": draw_count(), f"header_count_{s}": {f"h{i}": draw_count() for i in range(1, 7)},
        f"list_count_{s}": {"ordered": draw_count(), "unordered": draw_count()}, f"bold_count_{s}": {"**": draw_count(), "__": draw_count()},
        f"context_{s}_tokens": draw_count(),
    }
    return {**side("a"), **side("b"), "sum_user_tokens": draw_count(), "turns": 1}


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40) | st.sampled_from(["# Title\n- item\n**bold**", "[1] see {x}", '"quoted" \\ back'])
MESSAGES = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": TEXT}), min_size=1, max_size=4)


@st.composite
def fastchat_rows(draw, rows: int):
    """Votes as FastChat's logs hold them, each as the dict to write; in some logs, with their texts, or with
    numbers for ids and any time stamp."""
    out = []
    texts, numbered = draw(st.booleans()), draw(st.booleans())
    for i in range(rows):
        a, b = draw(st.sampled_from(MODELS)), draw(st.sampled_from(MODELS))
        out.append({
            **({f"conversation_{s}": draw(MESSAGES) for s in "ab"} if texts else {}),
            "question_id": 7_000 + i if numbered else f"q{i:04d}", "model_a": a, "model_b": b if b != a else MODELS[(MODELS.index(a) + 1) % len(MODELS)],
            "winner": draw(st.sampled_from(WINNERS)), "judge": f"arena_user_{i % 7}", "turn": draw(st.integers(1, 3)),
            "anony": draw(st.booleans()), "language": draw(st.sampled_from(["English", "German", "中文"])),
            "tstamp": draw(st.floats(1e9, 2e9) | st.integers(10**9, 2 * 10**9)) if numbered else 1.74e9 + i * 37.5, "conv_metadata": _meta(lambda: draw(st.integers(0, 40))),
            "category_tag": {"if_v0.1": {"if": draw(st.booleans()), "score": draw(st.integers(0, 5))}}, "is_code": draw(st.booleans()),
        })
    return out


def _vote(i: int) -> dict:
    """A clean vote, as FastChat writes them (no self-battles)."""
    return {
        "question_id": f"q{i:04d}", "model_a": MODELS[i % 5], "model_b": MODELS[(i + 1 + (i // 5) % 4) % 5], "winner": WINNERS[i % 4],
        "judge": f"arena_user_{i % 3}", "turn": 1, "anony": True, "language": "English", "tstamp": 1.74e9 + i,
        "conv_metadata": _meta(lambda: i % 7), "is_code": False,
    }


def _with_texts(vote: dict, i: int) -> dict:
    """A vote with its conversations instead of LMArena's counts of them."""
    turns = lambda answer: [{"role": "user", "content": "q\u00e9 \"x\""}, {"role": "assistant", "content": answer}]  # noqa: E731
    return {**{k: v for k, v in vote.items() if k != "conv_metadata"},
            "conversation_a": turns("# H\n" * (i % 4) + "- a\n" * (i % 3) + "**b** " * (i % 5)), "conversation_b": turns("word " * i)}


#: How FastChat writes its logs: JSON lines, or a JSON array (``clean_battle_*.json``: ``indent=2``), and compact.
LAYOUTS = ["jsonl", "json-indent", "json"]


def _fastchat_file(tmp_path, rows=40, texts=False, layout="jsonl", first=0):
    votes = [_with_texts(_vote(i), i) if texts else _vote(i) for i in range(first, first + rows)]
    path = tmp_path / f"votes.{layout.split('-')[0]}"
    if layout == "jsonl":
        path.write_text("".join(json.dumps(vote) + "\n" for vote in votes))
    else:
        path.write_text(json.dumps(votes, indent=2 if layout == "json-indent" else None))
    return path


def _line(row: dict, ascii_only: bool = False) -> bytes:
    return json.dumps(row, ensure_ascii=ascii_only, separators=(",", ":")).encode()


#: Hostile changes to a log: each takes (the rows as dicts, the lines as bytes, the place it applies at) and changes
#: the lines in place, the file as a whole for the first few.
def _set(field, value):
    def change(rows, lines, at):
        row = dict(rows[at])
        path = field.split(".")
        target = row
        for key in path[:-1]:
            target[key] = dict(target[key])
            target = target[key]
        if value is _DROP:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = value
        lines[at] = _line(row)
    return change


_DROP = object()


def _raw(text: bytes):
    def change(rows, lines, at):
        lines[at] = text
    return change


def _splice(old: bytes, new: bytes):
    def change(rows, lines, at):
        lines[at] = lines[at].replace(old, new, 1)
    return change


HOSTILE = {
    "malformed line": _raw(b'{"model_a": "x", "model_b":'),
    "not an object": _raw(b"[1, 2]"),
    "blank line": _splice(b"{", b"\n  \t\n{"),
    "invalid UTF-8": _splice(b'"judge":"', b'"judge":"\xff\xfe'),
    "invalid UTF-8 in a field not read": _splice(b'"is_code"', b'"x":"\xc3(","is_code"'),
    "duplicate key": _splice(b"{", b'{"model_a":"dup-model",'),
    "duplicate key, same value": lambda rows, lines, at: _splice(b"{", b'{"winner":"%s",' % rows[at]["winner"].encode())(rows, lines, at),
    "nested model name": _set("model_a", {"name": "gpt-4"}),
    "nested winner": _set("winner", ["model_a"]),
    "nested turn": _set("turn", {"n": 1}),
    "list timestamp": _set("tstamp", [1.7e9]),
    "string count": _set("conv_metadata.header_count_a.h1", "3"),
    "float count": _set("conv_metadata.sum_assistant_b_tokens", 1.5),
    "whole float count": _set("conv_metadata.list_count_a.ordered", 2.0),
    "exponent count": _set("conv_metadata.bold_count_b.**", 1e3),
    "negative count": _set("conv_metadata.sum_assistant_a_tokens", -4),
    "count too large": _set("conv_metadata.sum_assistant_a_tokens", 2**60),
    "group not an object": _set("conv_metadata.header_count_b", 7),
    "negative zero count": _set("conv_metadata.header_count_b.h4", -0.0),
    "count of 16 digits": _set("conv_metadata.header_count_b.h5", 10**15),
    "null count": _set("conv_metadata.header_count_b.h6", None),
    "count of 15 digits": _set("conv_metadata.header_count_a.h2", 10**15 - 1),
    "group of counts in another order": _set("conv_metadata.list_count_a", {"unordered": 1, "ordered": 2}),
    "group with another key": _set("conv_metadata.bold_count_a", {"**": 1, "__": 0, "~~": 2}),
    "group with a key given twice": _splice(b'"h1":', b'"h1":5,"h1":'),
    "group given twice": _splice(b'"list_count_b":{', b'"list_count_b":{"ordered":9},"list_count_b":{'),
    "empty group": _set("conv_metadata.header_count_a", {}),
    "group as the text of its counts": _set("conv_metadata.header_count_b", '{"h1": 0, "h2": 0, "h3": 0, "h4": 0, "h5": 0, "h6": 0}'),
    "group with a key of keys and counts": _set("conv_metadata.header_count_a", {"h1": 0, 'h2": 7, "h3': 1, "h4": 0, "h5": 0, "h6": 0}),
    "group with a key of keys and counts, its quotes escaped as code points": lambda rows, lines, at: lines.__setitem__(
        at, _line({**rows[at], "conv_metadata": {**rows[at]["conv_metadata"], "list_count_b": {'ordered": 4, "unordered': 1}}}).replace(b'\\"', b"\\u0022")),
    "null group": _set("conv_metadata.list_count_b", None),
    "null conv_metadata": _set("conv_metadata", None),
    "conv_metadata as text": _set("conv_metadata", '{"sum_assistant_a_tokens": 5}'),
    "count key spelt with escapes": _splice(b'"**":', b'"\\u002a\\u002a":-1,"x":'),
    "count spaced": _splice(b'"h3":', b'"h3" :\t'),
    "count key elsewhere": _splice(b'"is_code"', b'"tags":{"h1":"x","ordered":-1},"is_code"'),
    "late weight": _set("weight", 2.5),
    "late null weight": _set("weight", None),
    "late bad weight": _set("weight", -1),
    "late feature column": _set("tokens_a", 17),
    "late bad feature column": _set("tokens_a", "many"),
    "late id": _set("id", "battle-7"),
    "late conversation": _set("conversation_b", [{"role": "user", "content": "hi"}]),
    "nested message content": _set("conversation_a", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
    "message without content": _set("conversation_a", [{"role": "user"}]),
    "message of text": _set("conversation_b", ["hello"]),
    "conversation as text": _set("conversation_a", '[{"role": "user", "content": "hi"}]'),
    "empty conversation": _set("conversation_b", []),
    "message with more keys": _set("conversation_a", [{"role": "user", "content": "hi", "images": []}]),
    "message with null content": _set("conversation_a", [{"role": "user", "content": None}]),
    "message with null role": _set("conversation_b", [{"role": None, "content": "hi"}]),
    "message with its content first": _set("conversation_b", [{"content": "hi", "role": "user"}]),
    "message with a key between role and content": _set("conversation_a", [{"role": "user", "name": "x", "content": "hi"}]),
    "message with a number for content": _set("conversation_b", [{"role": "user", "content": 3}]),
    "null message": _set("conversation_a", [{"role": "user", "content": "hi"}, None]),
    "message in a text": _set("conversation_a", [{"role": "user", "content": '{"role": "user", "content": null}, "content": "x"'}]),
    "messages in another field": _set("messages", [{"role": "user", "content": "hi"}]),
    "role and content at the top level": lambda rows, lines, at: lines.__setitem__(at, _line({"role": "user", "content": "hi", **rows[at]})),
    "content key spelt with an escape": _splice(b'"content":', b'"c\\u006fntent":'),
    "content key given twice": _splice(b'"content":', b'"content":null,"content":'),
    "conversation given twice": _splice(b"{", b'{"conversation_a":[{"role":"user"}],'),
    "conversation given twice, then of another shape": lambda rows, lines, at: lines.__setitem__(at, lines[at][:-1] + b',"conversation_a":[{"type":"text"}]}'),
    "conv_metadata given twice, then with other counts": lambda rows, lines, at: lines.__setitem__(at, lines[at][:-1] + b',"conv_metadata":{"turns":1}}'),
    "conv_metadata given twice, then null": lambda rows, lines, at: lines.__setitem__(at, lines[at][:-1] + b',"conv_metadata":null}'),
    "late null id": _set("id", None),
    "late null id spelt with an escape": _splice(b"{", b'{"i\\u0064":null,'),
    "late Kaggle winner columns": lambda rows, lines, at: lines.__setitem__(at, _line({**rows[at], "winner_model_a": 1, "winner_model_b": 0})),
    "late null Kaggle winner columns": lambda rows, lines, at: lines.__setitem__(at, _line({**rows[at], "winner_model_a": None, "winner_model_b": None})),
    "missing winner": _set("winner", _DROP),
    "missing model": _set("model_b", _DROP),
    "missing conv_metadata": _set("conv_metadata", _DROP),
    "unicode escapes": lambda rows, lines, at: lines.__setitem__(at, _line({**rows[at], "model_a": "modèle-😀"}, ascii_only=True)),
    "lone high surrogate": _splice(b'"judge":"', b'"judge":"\\ud800x'),
    "lone high surrogate at a string's end": _splice(b'"judge":"arena_user_', b'"judge":"\\ud83d","j2":"'),
    "lone low surrogate": _splice(b'"language":"', b'"language":"\\udc00'),
    "escaped backslash before u": _splice(b'"judge":"', b'"judge":"\\\\ud800'),
    "very long line": _splice(b'"judge":"', b'"judge":"' + b"x" * 200_000),
    "repeated id": lambda rows, lines, at: _splice(b'"q%04d"' % at, b'"q0000"')(rows, lines, at),
    "repeated vote": lambda rows, lines, at: lines.__setitem__(at, lines[0]),
    "self battle": lambda rows, lines, at: lines.__setitem__(at, _line({**rows[at], "model_b": rows[at]["model_a"]})),
    "unknown winner": _set("winner", "draw"),
    "label to normalise": _set("winner", "Model_A"),
    "name to trim": _set("model_a", " gpt-4 "),
    "empty name": _set("model_a", ""),
    "bad turn": _set("turn", "two"),
    "bad timestamp": _set("tstamp", "yesterday"),
    "text timestamp": _set("tstamp", "2024-05-01 10:00:00"),
    "numeric anony": _set("anony", 1),
    "bad anony": _set("anony", "maybe"),
    "NaN": _splice(b'"is_code"', b'"x":NaN,"is_code"'),
    "Infinity": _splice(b'"is_code"', b'"x":-Infinity,"is_code"'),
    "huge exponent": _splice(b'"is_code"', b'"x":1e999,"is_code"'),
    "raw tab in a text": _splice(b'"judge":"', b'"judge":"a\tb'),
    "empty object": _raw(b"{}"),
    "nested value in a field not read": _set("language", {"name": "English"}),
    "nested duplicate key": _splice(b'"conv_metadata":{', b'"conv_metadata":{"sum_assistant_a_tokens":9,"header_count_b":null,'),
    "duplicate key in a field not read": _splice(b'"category_tag":{', b'"category_tag":{"if_v0.1":[],'),
    "quotes, brackets and backslashes in a text": _set("judge", '\\"],[{"a":1},\\' + "\\" * 31 + '"'),
    "raw line end in a text": _splice(b'"judge":"', b'"judge":"a\r\nb'),
    "UTF-8 of a surrogate": _splice(b'"judge":"', b'"judge":"\xed\xa0\x80'),
    "time stamp spelt otherwise": lambda rows, lines, at: lines.__setitem__(
        at, _line({**rows[at], "tstamp": 0}).replace(b'"tstamp":0', b'"tstamp":%.20E' % float(rows[at]["tstamp"]))),
    "large number id": _set("question_id", 123456789012345678901234567890),
    "negative zero id": _splice(b'"question_id":', b'"question_id":-0,"q":'),
    "nested as deeply as may be": _splice(b'"is_code"', b'"x":' + b"[" * 511 + b"]" * 511 + b',"is_code"'),
    "nested too deeply": _splice(b'"is_code"', b'"x":' + b"[" * 512 + b"]" * 512 + b',"is_code"'),
    "objects nested too deeply": _splice(b'"is_code"', b'"x":' + b'{"a":' * 700 + b"1" + b"}" * 700 + b',"is_code"'),
    "nested deeper than polars infers": _splice(b'"is_code"', b'"x":' + b'[{"a":' * 9 + b"1" + b"}]" * 9 + b',"is_code"'),
}
WHOLE_FILE = {
    "CRLF line ends": lambda data: data.replace(b"\n", b"\r\n"),
    "byte-order mark": lambda data: b"\xef\xbb\xbf" + data,
    "no final newline": lambda data: data.rstrip(b"\n"),
    "trailing blank lines": lambda data: data + b"\n \n\n",
}
#: Damage to the structure of a JSON array (its records, what opens and closes it and what separates them): the
#: batch path reports the array as damaged, or quarantines a record.
ARRAY_DAMAGE = {
    "empty record": lambda parts: parts["records"].insert(1, b""),
    "trailing comma": lambda parts: parts["records"].append(b""),
    "missing comma": lambda parts: parts["records"].__setitem__(slice(0, 2), [b" ".join(parts["records"][:2])]),
    "cut off": lambda parts: parts.update(close=b""),
    "cut off in a record": lambda parts: parts.update(close=b"", records=[*parts["records"][:-1], parts["records"][-1][:40]]),
    "text after the array": lambda parts: parts.update(close=parts["close"] + b" x"),
    "two arrays": lambda parts: parts.update(close=parts["close"] + b"[]"),
    "a record not an object": lambda parts: parts["records"].insert(1, b'"vote"'),
    "an object, not an array": lambda parts: parts.update(open=b"", close=b"", records=parts["records"][:1]),
    "white space": lambda parts: parts.update(separator=b" \t,\r\n\t", open=b" \t\r\n[\n"),
}


def _pretty(line: bytes) -> bytes:
    """A record as ``json.dumps(..., indent=2)`` lays it out within an array, on its bytes (it may not be JSON)."""
    out, level, inside, escaped, empty = bytearray(), 1, False, False, False
    chars = [line[i : i + 1] for i in range(len(line))]
    for char, after in zip(chars, [*chars[1:], b""]):
        if inside:
            inside, escaped = escaped or char != b'"', not escaped and char == b"\\"
            out += char
        elif empty or char + after in (b"{}", b"[]"):  # an empty object or list stays as it is
            out += char
            empty = not empty
        elif char in (b"{", b"["):
            level += 1
            out += char + b"\n" + b"  " * level
        elif char in (b"}", b"]"):
            level -= 1
            out += b"\n" + b"  " * level + char
        else:
            inside = char == b'"'
            out += {b",": b",\n" + b"  " * level, b":": b": "}.get(char, char)
    return bytes(out)


#: How a JSON array of records is laid out: as FastChat writes it (``indent=2``), compact, or one record a line.
ARRAY_LAYOUTS = ["indent", "compact", "lines"]


def _array(lines: list[bytes], layout: str, damage: list[str]) -> bytes:
    """The records (as compact lines) in a JSON array laid out as ``layout`` says (:data:`ARRAY_LAYOUTS`)."""
    indent = layout == "indent"
    separator = {"indent": b",\n  ", "compact": b",", "lines": b",\n"}[layout]
    parts: dict = {"open": b"[\n  " if indent else b"[", "separator": separator, "close": b"\n]" if indent else b"]",
                   "records": [_pretty(line) for line in lines] if indent else list(lines)}
    for name in damage:
        ARRAY_DAMAGE[name](parts)
    return parts["open"] + parts["separator"].join(parts["records"]) + parts["close"]


def _batch_path(monkeypatch):
    """Reads from now on by the batch path."""
    monkeypatch.setattr(reading, "read_json_streamed", lambda *args: ReadPath.LEAN)


def _comparable(result):
    return result.battles, result.quarantine, result.summaries


def _assert_same(fast, batch):
    assert fast[0].schema == batch[0].schema
    assert fast[0].equals(batch[0]), [(c, fast[0][c].to_list(), batch[0][c].to_list()) for c in fast[0].columns if not fast[0][c].equals(batch[0][c])]
    assert fast[1].equals(batch[1]), (fast[1], batch[1])
    assert fast[2] == batch[2]


CLEAN = [_vote(i) for i in range(12)]
#: Votes with nothing nested in them.
FLAT = [{k: v for k, v in vote.items() if k != "conv_metadata"} for vote in CLEAN]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@example(CLEAN, [("nested value in a field not read", 2), ("lone high surrogate", 6)], [], PLAIN, (200_000, 64 << 20), 1, 4 << 20)
@example(CLEAN, [("nested value in a field not read", 2), ("lone high surrogate at a string's end", 9)], [], STYLED, (200_000, 64 << 20), 1, 4 << 20)
@example(CLEAN, [("late weight", 9)], ["CRLF line ends"], PLAIN, (5, 700), 4, 4 << 20)
@example(CLEAN, [("late null weight", 9)], [], PLAIN, (200_000, 64 << 20), 4, 4 << 20)
@example(CLEAN, [("late id", 3)], [], PLAIN, (3, 2500), 2, 4 << 20)
@example(CLEAN, [("late id", 11)], [], PLAIN, (3, 700), 2, 4 << 20)
@example(CLEAN, [("late null id", 4)], [], PLAIN, (200_000, 64 << 20), 2, 4 << 20)
@example(CLEAN, [("late null Kaggle winner columns", 5)], [], PLAIN, (200_000, 64 << 20), 3, 4 << 20)
@example(CLEAN, [("late Kaggle winner columns", 10)], [], PLAIN, (5, 64 << 20), 3, 4 << 20)
@example(CLEAN, [("repeated id", 7), ("self battle", 2)], ["byte-order mark", "trailing blank lines"], STYLED, (5, 700), 12, 1)
@example(CLEAN, [("self battle", 0)], ["byte-order mark", "CRLF line ends"], PLAIN, (2, 3), 1, 1)
@example(CLEAN, [("self battle", 7), ("unknown winner", 10)], ["CRLF line ends"], PLAIN, (2, 3), 12, 4 << 20)  # blocks read at once
@example(CLEAN, [("unknown winner", 6), ("self battle", 11)], ["trailing blank lines"], STYLED, (3, 700), 12, 500)  # blocks read at once
@example(CLEAN, [("nested as deeply as may be", 2), ("nested deeper than polars infers", 5)], [], STYLED, (200_000, 64 << 20), 1, 4 << 20)
@example(CLEAN, [("nested too deeply", 3), ("objects nested too deeply", 8)], ["CRLF line ends"], PLAIN, (5, 700), 1, 500)
@example(CLEAN, [("conv_metadata given twice, then with other counts", 1)], [], STYLED, (2, 3), 1, 4 << 20)
@example(FLAT, [("late null id spelt with an escape", 2)], [], PLAIN, (200_000, 64 << 20), 1, 4 << 20)
@example(CLEAN, [("count key spelt with escapes", 4)], [], PLAIN, (200_000, 64 << 20), 1, 4 << 20)
@example(CLEAN, [("count key elsewhere", 2), ("whole float count", 3), ("negative count", 9)], [], PLAIN, (5, 700), 1, 500)
@example(CLEAN, [("count spaced", 2), ("group not an object", 6)], [], PLAIN, (200_000, 64 << 20), 1, 4 << 20)
@example(CLEAN, [("group with a key of keys and counts", 3), ("group as the text of its counts", 5)], [], STYLED, (200_000, 64 << 20), 1, 4 << 20)
@example(CLEAN, [("group with a key of keys and counts, its quotes escaped as code points", 4)], [], STYLED, (200_000, 64 << 20), 1, 4 << 20)
@example(CLEAN, [("group of counts in another order", 2), ("group with another key", 7), ("count of 15 digits", 9)], [], STYLED, (5, 700), 1, 500)
@example(CLEAN, [("group of counts in another order", 0), ("group with a key given twice", 4)], [], STYLED, (200_000, 64 << 20), 12, 4 << 20)
@example(CLEAN, [("group given twice", 3), ("empty group", 6), ("whole float count", 8)], [], STYLED, (200_000, 64 << 20), 1, 4 << 20)
@example(CLEAN, [("exponent count", 2), ("negative zero count", 5), ("count of 16 digits", 9)], [], STYLED, (200_000, 64 << 20), 1, 4 << 20)
@given(
    fastchat_rows(12), st.lists(st.tuples(st.sampled_from(sorted(HOSTILE)), st.integers(0, 11)), max_size=3),
    st.lists(st.sampled_from(sorted(WHOLE_FILE)), max_size=2, unique=True), st.sampled_from([PLAIN, STYLED]),
    st.sampled_from([(200_000, 64 << 20), (5, 700), (3, 2500), (2, 3)]), st.integers(1, 12), st.sampled_from([1, 500, 4 << 20]),
)
def test_a_streamed_read_gives_the_battles_quarantine_and_counts_of_the_batch_path(tmp_path, monkeypatch, rows, changes, whole, columns, batch, prefix, piece):
    """Whatever the lines hold (clean votes, votes to quarantine, lines the batch path reads line by line, keys
    that appear late, damage anywhere), and however the file is cut into batches, blocks and pieces, a streamed
    read gives what the batch path gives: it reads the file itself, or hands it to the batch path. Its plan is
    decided from the first ``prefix`` lines."""
    lines = [_line(row) for row in rows]
    for name, at in changes:
        HOSTILE[name](rows, lines, at)
    data = b"".join(line + b"\n" for line in lines)
    for name in whole:
        data = WHOLE_FILE[name](data)
    path = tmp_path / "votes.jsonl"
    path.write_bytes(data)
    _assert_read_alike(monkeypatch, path, InputOptions(batch_rows=batch[0], batch_bytes=batch[1]), columns, prefix, piece)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@example(CLEAN, [], [], [], "indent", PLAIN, (200_000, 64 << 20), 12)
@example(CLEAN, [("unknown winner", 1), ("nested too deeply", 5)], [], [], "lines", STYLED, (3, 2500), 12)
@example(CLEAN, [("duplicate key", 3), ("self battle", 5)], [], ["byte-order mark"], "compact", STYLED, (5, 700), 12)
@example(CLEAN, [("nested duplicate key", 1), ("unknown winner", 2)], [], [], "indent", STYLED, (200_000, 64 << 20), 12)
@example(CLEAN, [("nested value in a field not read", 2), ("duplicate key", 4)], [], [], "compact", PLAIN, (200_000, 64 << 20), 12)
@example(CLEAN, [("quotes, brackets and backslashes in a text", 4), ("empty name", 6)], [], ["CRLF line ends"], "indent", PLAIN, (2, 3), 1)
@example(CLEAN, [("time stamp spelt otherwise", 3), ("unicode escapes", 7)], [], [], "compact", STYLED, (3, 2500), 12)
@example(CLEAN, [("UTF-8 of a surrogate", 0)], ["cut off"], [], "compact", PLAIN, (200_000, 64 << 20), 12)
@example(CLEAN, [], ["cut off in a record"], [], "indent", PLAIN, (200_000, 64 << 20), 12)
@example(CLEAN, [("late null id", 1)], [], [], "indent", PLAIN, (5, 700), 1)  # in the batch path's first batch, not in the first block
@example(CLEAN, [("nested as deeply as may be", 2), ("nested deeper than polars infers", 5)], [], [], "compact", STYLED, (200_000, 64 << 20), 1)
@example(CLEAN, [("nested too deeply", 3), ("objects nested too deeply", 8)], [], [], "indent", PLAIN, (5, 700), 1)
@given(
    fastchat_rows(12), st.lists(st.tuples(st.sampled_from(sorted(HOSTILE)), st.integers(0, 11)), max_size=3),
    st.lists(st.sampled_from(sorted(ARRAY_DAMAGE)), max_size=1), st.lists(st.sampled_from(sorted(WHOLE_FILE)), max_size=2, unique=True),
    st.sampled_from(ARRAY_LAYOUTS), st.sampled_from([PLAIN, STYLED]), st.sampled_from([(200_000, 64 << 20), (5, 700), (3, 2500), (2, 3)]), st.integers(1, 12),
)
def test_a_streamed_read_of_a_json_array_gives_what_the_batch_path_gives(
    tmp_path, monkeypatch, rows, changes, damage, whole, layout, columns, batch, prefix
):
    """The same for a JSON array of the records, laid out as FastChat writes it (``indent=2``), compact or one
    record a line, its structure damaged or not: a streamed read gives the battles, quarantine and counts (or the
    error) of the batch path, which decodes every record with Python's json module."""
    lines = [_line(row) for row in rows]
    for name, at in changes:
        HOSTILE[name](rows, lines, at)
    data = _array(lines, layout, damage)
    for name in whole:
        data = WHOLE_FILE[name](data)
    path = tmp_path / "votes.json"
    path.write_bytes(data)
    _assert_read_alike(monkeypatch, path, InputOptions(batch_rows=batch[0], batch_bytes=batch[1]), columns, prefix)


#: Messages as logs write them (raw JSON: role first or content first, compact or spaced, texts that look like keys
#: or hold escapes), and as they should not be: keys missing, given twice, spelt with escapes or among others; values
#: null, nested, numbers; messages that are no objects.
ROLES = st.sampled_from(['"user"', '"assistant"', '"system"'])
TRICKY_TEXTS = ['"content": null', '{"role": "user"}', '", "role": "x', "\\u0063ontent", 'say \\"role\\": 1', "😀 é", "\\", "{", "[1]", ""]
#: Keys the streamed read searches a log of these votes for on its bytes (:func:`streamed_jsonl._sought`).
SEARCHED_KEYS = (b'"id"', b'"battle_id"', b'"winner_model_')
CONTENTS = st.tuples(TEXT | st.sampled_from(TRICKY_TEXTS), st.booleans()).map(lambda text: json.dumps(text[0], ensure_ascii=text[1]))
SEPARATORS = st.sampled_from([(",", ":"), (", ", ": "), (" , ", " : ")])


def _object(pairs, separators=(",", ":")):
    return "{" + separators[0].join(f"{key}{separators[1]}{value}" for key, value in pairs) + "}"


USUAL_MESSAGES = st.builds(lambda role, content, first, separators: _object([("\"role\"", role), ("\"content\"", content)][:: 1 if first else -1], separators),
                           ROLES, CONTENTS, st.booleans(), SEPARATORS)
MESSAGE_KEYS = st.sampled_from(['"role"', '"content"', '"c\\u006fntent"', '"r\\u006Fle"', '"name"', '"x\\"content"', '"role "'])
MESSAGE_VALUES = ROLES | CONTENTS | st.sampled_from(
    ["null", "3", "1.5", "true", "[]", "{}", '{"a": 1}', '[{"type": "text", "text": "hi"}]', '{"role": "user", "content": "x"}',
     '[{"content": null}]', '"\\ud800x"', '"x\\u0072"'])
ODD_MESSAGES = st.lists(st.tuples(MESSAGE_KEYS, MESSAGE_VALUES), max_size=4).map(_object) | st.sampled_from(
    ["null", '"hello"', "3", "[1]", '[{"role": "user", "content": "x"}]'])  # not [] beside a key given twice: polars 2.1 panics
CONVERSATIONS = st.lists(USUAL_MESSAGES | USUAL_MESSAGES | ODD_MESSAGES, max_size=4).map(lambda messages: "[" + ",".join(messages) + "]") | st.sampled_from(
    ["null", "[]", '"[]"', '{"role": "user", "content": "x"}'])
#: What else a line may hold that has the keys of messages: other lists of messages, a message at the top level, a
#: conversation given twice, such keys nested elsewhere.
EXTRAS = st.sampled_from(["", ',"messages":[{"role":"user","content":"x"}]', ',"role":"user","content":"x"', ',"conversation_a":[{"role":"user"}]',
                          ',"meta":{"content":null}', ',"meta":{"role":"user","content":"x"}', ',"conversation_b":[{"type":"text"}]', ',"conversation_b":null',
                          ',"conv_metadata":{}'])


@st.composite
def conversation_lines(draw, rows: int, usual: bool):
    """Lines of votes with their conversations, as logs write them; unless ``usual``, one or two lines (or none) with a
    conversation as logs may write it otherwise, and what else the line holds."""
    odd = set() if usual else draw(st.sets(st.integers(0, rows - 1), max_size=2))
    lines = []
    for i in range(rows):
        sides = [draw(st.lists(USUAL_MESSAGES, max_size=4).map(lambda messages: "[" + ",".join(messages) + "]")) for _ in "ab"]
        extra = ""
        if i in odd:
            sides[draw(st.integers(0, 1))], extra = draw(CONVERSATIONS), draw(EXTRAS)
        lines.append(f'{{"conversation_a":{sides[0]},{json.dumps(_vote(i))[1:-1]},"conversation_b":{sides[1]}{extra}}}'.encode())
    return lines


def _with_conversation(conversation: str, i: int = 1) -> bytes:
    """A vote whose ``conversation_a`` is the raw JSON given, and ``conversation_b`` as logs write it."""
    vote = {k: v for k, v in _with_texts(_vote(i), i).items() if k != "conversation_a"}
    return f'{{"conversation_a":{conversation},{json.dumps(vote)[1:]}'.encode()


USUAL_LINE = _line(_with_texts(_vote(0), 0))
#: Lines whose first message a check of conversations that is too lax takes for one with a text: each is its own
#: batch in the batch path (batches of a line), where a column of messages with no text is no conversation.
LAX = [
    '[{"role":"user"}]',  # no text
    '[{"role":"user","content":{"a":1}}]',  # a nested text
    '[{"name":"x"}]',  # no role and no text
    '[{"r\\u006fle":"user"}]',  # a role spelt with an escape, and no text
    '[{"x\\"content":"v","role":"user"}]',  # a key that ends as ``"content"`` does
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@example([USUAL_LINE, _with_conversation('[{"role":"user","content":null,"content":"y"}]')], PLAIN, (200_000, 64 << 20), 1, 4 << 20)
@example([USUAL_LINE, _with_conversation('[{"role":"user","c\\u006fntent":null,"content":"y"}]')], STYLED, (200_000, 64 << 20), 1, 1)
@example([USUAL_LINE, _with_conversation('[{"role":"user","content":"x"},{"role":"user","content":"y","role":"a","content":"z"},{"role":"user"}]')],
         PLAIN, (200_000, 64 << 20), 1, 4 << 20)
@example([USUAL_LINE, _with_conversation(LAX[0])], PLAIN, (2, 3), 1, 4 << 20)
@example([USUAL_LINE, _with_conversation(LAX[1])], STYLED, (2, 3), 1, 4 << 20)
@example([USUAL_LINE, _with_conversation(LAX[2])], PLAIN, (2, 3), 1, 4 << 20)
@example([USUAL_LINE, _with_conversation(LAX[3])], PLAIN, (2, 3), 1, 300)
@example([USUAL_LINE, _with_conversation(LAX[4])], STYLED, (2, 3), 1, 4 << 20)
@example([USUAL_LINE, USUAL_LINE[:-1] + b',"conversation_a":[{"type":"text"}]}'], PLAIN, (2, 3), 1, 4 << 20)
@example([USUAL_LINE, USUAL_LINE.replace(b'"conversation_a"', b'"conversation\\u005fa"', 1)[:-1] + b',"conversation_a":[{"type":"text"}]}'], PLAIN, (2, 3), 1, 4 << 20)
@given(conversation_lines(8, usual=False), st.sampled_from([PLAIN, STYLED]), st.sampled_from([(200_000, 64 << 20), (3, 2500), (2, 3)]), st.integers(1, 8),
       st.sampled_from([1, 300, 4 << 20]))
def test_conversations_are_read_as_the_batch_path_reads_them(tmp_path, monkeypatch, lines, columns, batch, prefix, piece):
    """Whatever the messages of a log's conversations hold, a streamed read that keeps their texts (a style fit
    that counts them) or only checks them (a plain fit, which reads their roles only) gives what the batch path
    gives, or hands the file to it: a message without a text, or with a null or nested one, or whose keys are
    given twice or spelt otherwise, is not taken for one with a text."""
    path = tmp_path / "votes.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    _assert_read_alike(monkeypatch, path, InputOptions(batch_rows=batch[0], batch_bytes=batch[1]), columns, prefix, piece)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@example([USUAL_LINE, _with_conversation(json.dumps([{"role": "user", "content": "\x7f \\u0063 \\ud83d \U0001f600"}]))], PLAIN, 4 << 20)
@given(conversation_lines(8, usual=True), st.sampled_from([PLAIN, STYLED]), st.sampled_from([1, 300, 4 << 20]))
def test_conversations_as_logs_write_them_are_streamed(tmp_path, monkeypatch, lines, columns, piece):
    """Messages with a role and a text (either first; texts that look like JSON keys or hold escapes): the streamed
    read reads them itself, and gives what the batch path gives. But for a text that is a key the read searches
    the bytes for (``"id"``, ``"winner_model_…``): a false alarm, which hands the file to the batch path."""
    assume(not any(key in line for line in lines for key in SEARCHED_KEYS))
    path = tmp_path / "votes.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    with monkeypatch.context() as patched:
        patched.setattr(streamed_jsonl, "_PIECE_BYTES", piece)
        patched.setattr(reading, "read_lean", _no_batch_path)
        fast = read_sources([path], columns=columns)
    with monkeypatch.context() as patched:
        _batch_path(patched)
        _assert_same(_comparable(fast), _comparable(read_sources([path], columns=columns)))


def _assert_read_alike(monkeypatch, path, options, columns, prefix, piece_bytes=4 << 20):
    """A streamed read of ``path``, its plan decided from its first ``prefix`` lines, its blocks searched in pieces of
    about ``piece_bytes``, gives what the batch path gives, or the same error; or it hands the file to the batch
    path."""
    with monkeypatch.context() as patched:
        patched.setattr(streamed_jsonl, "PREFIX_ROWS", prefix)
        patched.setattr(streamed_jsonl, "_PIECE_BYTES", piece_bytes)
        patched.setattr(reading, "read_lean", _no_batch_path)
        try:
            fast = _outcome(path, options, columns)
        except _BatchPath:
            return
    with monkeypatch.context() as patched:
        _batch_path(patched)
        batch = _outcome(path, options, columns)
    if isinstance(fast, str) or isinstance(batch, str):
        assert fast == batch
    else:
        _assert_same(fast, batch)


def _outcome(path, options, columns):
    try:
        return _comparable(read_sources([path], options, columns=columns))
    except InputError as error:
        return str(error)


class _BatchPath(Exception):
    """The streamed read handed the file to the batch path."""


def _no_batch_path(*args, **kwargs):
    raise _BatchPath


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(fastchat_rows(30), st.lists(st.tuples(st.sampled_from(sorted(HOSTILE)), st.integers(0, 29)), max_size=2), st.sampled_from(["none", "both"]))
def test_a_fit_of_a_jsonl_log_is_that_of_the_batch_path(tmp_path, monkeypatch, rows, changes, style):
    """`arena fit votes.jsonl` gives the leaderboard of the batch path (or the same error)."""
    lines = [_line(row) for row in rows]
    for name, at in changes:
        HOSTILE[name](rows, lines, at)
    path = tmp_path / "votes.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))

    def fitted():
        try:
            result = api.fit(Source((path,)), min_battles=1, ci="none", style=style)
        except NoDataError as error:
            return str(error)
        return result.leaderboard, result.warnings

    fast = fitted()
    with monkeypatch.context() as patched:
        _batch_path(patched)
        batch = fitted()
    if isinstance(fast, str):
        assert fast == batch
    else:
        assert fast[0].equals(batch[0]) and fast[1] == batch[1]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("columns", [PLAIN, STYLED])
@pytest.mark.parametrize("texts", [False, True])
def test_fastchat_logs_are_streamed(tmp_path, monkeypatch, columns, texts, layout):
    """The logs tools write (FastChat's JSON lines and arrays, with LMArena's counts or the conversations) are read
    by the streamed path, never by the batch path, for a plain fit and a style fit alike."""
    path = _fastchat_file(tmp_path, texts=texts, layout=layout)
    monkeypatch.setattr(reading, "read_lean", _no_batch_path)
    monkeypatch.setattr(reading, "read_full", _no_batch_path)
    result = read_sources([path], columns=columns)
    assert result.battles.height == 40 and result.quarantine.height == 0
    if columns is STYLED and texts:
        assert result.battles["conversation_b"].list.get(1).struct.field("content").to_list() == ["word " * i for i in range(40)]
    elif columns is STYLED:
        assert result.battles["meta_tokens_a"].to_list() == [i % 7 for i in range(40)]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_counts_of_a_clean_log_are_parsed_from_their_groups_text(tmp_path, monkeypatch, layout):
    """A style read of a log as tools write it takes LMArena's groups of counts as text and parses them (polars
    decodes a struct within a struct at several times the cost), block after block, never reading them again."""
    path = _fastchat_file(tmp_path, rows=40, layout=layout)
    parsed = []
    grouped = streamed_jsonl._grouped_counts
    monkeypatch.setattr(streamed_jsonl, "_grouped_counts", lambda frame, layout: parsed.append(grouped(frame, layout)) or parsed[-1])
    monkeypatch.setattr(reading, "read_lean", _no_batch_path)
    result = read_sources([path], columns=STYLED)
    assert parsed and all(frame is not None for frame in parsed)
    assert result.battles["meta_h6_b"].to_list() == [i % 7 for i in range(40)]


def test_counts_parsed_from_text_are_those_of_structs_whatever_the_column_is_named(tmp_path):
    """The groups of counts parsed from their text give the frame a read of them as structs gives, nulls (a null
    group, a null or absent ``conv_metadata``) included, also when a mapping takes ``conv_metadata`` from a column
    named as one of its own groups."""
    votes = [_vote(i) for i in range(6)]
    votes[1]["conv_metadata"]["list_count_b"] = None
    votes[2]["conv_metadata"] = None
    del votes[3]["conv_metadata"]
    path = tmp_path / "votes.jsonl"
    path.write_text("".join(json.dumps({"header_count_a" if k == "conv_metadata" else k: v for k, v in vote.items()}) + "\n" for vote in votes))
    layout = streamed_jsonl._layout(path, "jsonl", InputOptions(mapping={"conv_metadata": "header_count_a"}), STYLED)
    assert layout is not None and layout.meta_read == "header_count_a"
    as_text, as_structs = (pl.read_ndjson(path, schema=layout.again(False, counts)) for counts in (False, True))
    parsed = streamed_jsonl._grouped_counts(as_text, layout)
    assert parsed is not None and parsed.equals(as_structs)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("style, texts", [("none", False), ("both", False), ("both", True)])
def test_a_fit_of_a_fastchat_log_is_streamed(tmp_path, monkeypatch, style, texts, layout):
    """`arena fit votes.jsonl` (or `votes.json`), plain or with style counts (LMArena's, or from the texts), reads
    the log by the streamed path, and gives the leaderboard of the batch path."""
    path = _fastchat_file(tmp_path, rows=60, texts=texts, layout=layout)
    with monkeypatch.context() as patched:
        patched.setattr(reading, "read_lean", _no_batch_path)
        patched.setattr(reading, "read_full", _no_batch_path)
        streamed = api.fit(Source((path,)), min_battles=1, ci="none", style=style)
    _batch_path(monkeypatch)
    assert api.fit(Source((path,)), min_battles=1, ci="none", style=style).leaderboard.equals(streamed.leaderboard)


def test_rows_to_reject_are_quarantined_by_the_streamed_read_with_their_lines(tmp_path, monkeypatch):
    """Self-battles, unknown labels, values of the wrong type: quarantined with their line numbers, reasons and
    original lines (CRs and the byte-order mark left out, blank lines counted), as the batch path does."""
    rows = [json.dumps({"model_a": "a", "model_b": "b", "winner": w, "turn": t}) for w, t in
            [("model_a", 1), ("draw", 1), ("tie", "x"), ("model_b", 2)]]
    path = tmp_path / "votes.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n\r\n".join(rows).encode() + b"\r\n")
    with monkeypatch.context() as patched:
        patched.setattr(reading, "read_lean", _no_batch_path)
        fast = read_sources([path], columns=PLAIN)
    _batch_path(monkeypatch)
    batch_result = read_sources([path], columns=PLAIN)
    assert fast.quarantine["source_row"].to_list() == [3, 5]
    assert fast.quarantine["raw"].to_list() == [rows[1], rows[2]]
    _assert_same(_comparable(fast), _comparable(batch_result))


def test_rows_to_reject_in_an_array_are_quarantined_with_their_records_as_the_batch_path_writes_them(tmp_path, monkeypatch):
    """In a JSON array, rows are numbered by record, and a rejected record is quarantined written again as one line
    (``json.dumps``: escapes decoded, its key's first value kept), as the batch path gives it."""
    path = tmp_path / "votes.json"
    path.write_bytes(b'\xef\xbb\xbf[\r\n  {"model_a": "a", "model_b": "b", "winner": "model_a"},\r\n  {\r\n    "model_a": "a",'
                     b' "model_b": "b",\r\n    "winner": "dr\\u00e2w", "winner": "tie"},\n{"model_a":"a","model_b":"a","winner":"tie",'
                     b'"note":"\\"[1,2]\\"\\\\"}\n]\n')
    with monkeypatch.context() as patched:
        patched.setattr(reading, "read_lean", _no_batch_path)
        fast = read_sources([path], columns=PLAIN)
    _batch_path(monkeypatch)
    assert fast.quarantine["source_row"].to_list() == [2, 3]
    assert fast.quarantine["raw"].to_list() == ['{"model_a": "a", "model_b": "b", "winner": "dr\u00e2w"}',
                                                '{"model_a": "a", "model_b": "a", "winner": "tie", "note": "\\"[1,2]\\"\\\\"}']
    _assert_same(_comparable(fast), _comparable(read_sources([path], columns=PLAIN)))


@pytest.mark.parametrize("layout", ["jsonl", "json"])
@pytest.mark.parametrize("uneven", [False, True])
def test_a_key_given_twice_has_its_first_value_in_every_read(tmp_path, monkeypatch, layout, uneven):
    """At the top level or nested, by the streamed read, by the batch path's polars read, and by Python's json module
    (which decodes a JSON array's records, and the lines of a batch polars cannot read as one frame: ``uneven``, a
    field that is an object in one line and text in another)."""
    lines = [b'{"model_a": "first", "model_b": "b", "winner": "model_a", "model_a": "second", "turn": 1, '
             b'"conv_metadata": {"sum_assistant_a_tokens": 5, "sum_assistant_a_tokens": 7}, "language": %s}' % language
             for language in ([b'{"name": "English"}', b'"English"'] if uneven else [b'"English"', b'"German"'])]
    path = tmp_path / f"votes.{layout}"
    path.write_bytes(b"\n".join(lines) + b"\n" if layout == "jsonl" else b"[" + b",\n".join(lines) + b"]")
    columns = [*PLAIN, "turn", "tokens_a", *META_COLUMNS]
    streamed = read_sources([path], columns=columns)
    _batch_path(monkeypatch)
    for result in (streamed, read_sources([path], columns=columns), read_sources([path])):
        assert result.battles["model_a"].to_list() == ["first", "first"]
        assert result.battles["meta_tokens_a"].to_list() == [5, 5]


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_a_compressed_array_is_streamed(tmp_path, monkeypatch, compress):
    """Read a block at a time from the decompressed stream, however much each read gives."""
    path = _fastchat_file(tmp_path, rows=300, layout="json-indent")
    compressed = tmp_path / "votes.json.z"
    compressed.write_bytes(compress(path.read_bytes()))
    with monkeypatch.context() as patched:
        patched.setattr(reading, "read_lean", _no_batch_path)
        streamed = read_sources([compressed], InputOptions(batch_bytes=10_000), columns=STYLED)
    _batch_path(monkeypatch)
    assert streamed.battles.height == 300
    _assert_same(_comparable(streamed), _comparable(read_sources([compressed], InputOptions(batch_bytes=10_000), columns=STYLED)))


def test_jsonl_logs_and_arrays_are_streamed_together(tmp_path, monkeypatch):
    paths = [_fastchat_file(tmp_path, rows=30), _fastchat_file(tmp_path, rows=20, layout="json-indent", first=30)]
    assert reading.choose_read_path(paths, InputOptions(), PLAIN).path is ReadPath.STREAMED_JSON
    with monkeypatch.context() as patched:
        patched.setattr(reading, "read_lean", _no_batch_path)
        patched.setattr(reading, "read_full", _no_batch_path)
        streamed = read_sources(paths, columns=STYLED)
    assert [s.rows_read for s in streamed.summaries] == [30, 20]
    _batch_path(monkeypatch)
    _assert_same(_comparable(streamed), _comparable(read_sources(paths, columns=STYLED)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40).map(lambda line: line.replace(b"\n", b"")), max_size=30), st.booleans(), st.booleans(),
       st.integers(1, 300), st.sampled_from([1, 7, 64, 4 << 20]))
def test_a_jsonl_file_is_read_in_blocks_of_pieces_of_whole_lines(lines, bom, final, size, piece):
    """Whatever the lengths of its lines (longer than a piece, or than a block), a file is read in blocks of about
    ``size`` bytes, in pieces of whole lines: together, the file as it is, its byte-order mark dropped."""
    data = b"\xef\xbb\xbf" * bom + b"\n".join(lines) + (b"\n" if final and lines else b"")
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(streamed_jsonl, "_PIECE_BYTES", piece)
        blocks = list(streamed_jsonl._line_blocks(io.BytesIO(data), size))
    assert b"".join(p for block in blocks for p in block.pieces) == data.removeprefix(b"\xef\xbb\xbf")
    pieces = [p for block in blocks for p in block.pieces]
    assert all(pieces) and all(p.endswith(b"\n") for p in pieces[:-1])
    assert all(sum(map(len, block.pieces)) >= size for block in blocks[:-1])
    texts = [b"".join(block.pieces) for block in blocks]
    assert [block.lines for block in blocks] == [text.count(b"\n") + (not text.endswith(b"\n")) for text in texts]


def test_pieces_after_a_line_longer_than_a_piece_are_of_a_piece_s_size(monkeypatch):
    """The buffer made larger to hold a long line is made a piece's size again once the line is read: the pieces
    after it (searched one at a time, each taking four times its size) are no larger than the pieces before."""
    monkeypatch.setattr(streamed_jsonl, "_PIECE_BYTES", 16)
    data = b"abcd\n" * 20 + b"x" * 1000 + b"\n" + b"abcd\n" * 50
    pieces = [p for block in streamed_jsonl._line_blocks(io.BytesIO(data), 1 << 20) for p in block.pieces]
    assert b"".join(pieces) == data
    long = next(i for i, p in enumerate(pieces) if b"x" in p)
    assert all(len(p) <= 16 for p in pieces[:long] + pieces[long + 1 :])


#: Ways a JSON number may be spelt: as Python writes it, and with more digits, trailing zeros or exponents.
SPELLINGS = [repr, "{:.17e}".format, "{:.25g}".format, "{:.20E}".format, lambda v: f"{v}00" if "." in f"{v}" and "e" not in f"{v}" else f"{v}"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.floats(allow_nan=False, allow_infinity=False) | st.floats(1e9, 2e9), st.integers(0, len(SPELLINGS) - 1),
                          st.integers(-(2**80), 2**80) | st.integers(0, 10**6)), min_size=1, max_size=20))
def test_numbers_read_as_text_from_an_array_are_those_of_the_batch_path(tmp_path, numbers):
    """Time stamps and ids that are numbers are read as text: polars renders a number of a line of the array as it
    renders the number the batch path writes again (Python's shortest repr of the same float, the same digits of
    an integer), however it is spelt."""
    path = tmp_path / "numbers.json"
    path.write_text("[" + ",\n".join(f'{{"tstamp": {SPELLINGS[how](value)}, "question_id": {number}}}' for value, how, number in numbers) + "]")
    batch = pl.concat([part.frame for part in read_json_array(path)]).select("tstamp", "question_id")
    with path.open("rb") as handle:
        lines = b"".join(piece for block in array_lines(handle, 1 << 20, 1 << 20) for piece in block.pieces)
        fast = pl.read_ndjson(lines, schema={"tstamp": pl.String, "question_id": pl.String})
    assert fast.equals(batch)


def test_a_block_of_brackets_is_checked_for_depth_in_the_memory_of_one_without(tmp_path):
    """Texts full of brackets (code, math, a hostile file) are checked for lines nested too deeply on their bytes,
    their opening brackets counted per line a slice at a time: the positions of every bracket of a block, listed at
    once, took several bytes per byte of the text (a 32 MB block of them: 200 MB more at the peak). Each process
    reads one 32 MB block by the streamed read: lines of 400 brackets in a string, or of 400 letters."""
    line = '{"model_a": "a", "model_b": "b", "winner": "tie", "x": "%s"}\n'
    code = (
        "import resource, sys\n"
        "from arena_cli.io import streamed_jsonl\n"
        "from arena_cli.io.reading import read_sources\n"
        "read, blocks = streamed_jsonl._read, []\n"
        "streamed_jsonl._read = lambda *args: blocks.append(read(*args)) or blocks[-1]\n"
        "assert read_sources([sys.argv[1]], columns=['model_a', 'model_b', 'outcome', 'weight']).battles.height == 70_000\n"
        "assert blocks and all(block is not None for block in blocks)\n"  # (the streamed read, not the batch path)
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    peaks = {}
    for name, letter in (("letters", "y"), ("brackets", "[")):
        path = tmp_path / f"{name}.jsonl"
        path.write_text((line % (letter * 400)) * 70_000)
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        peaks[name] = int(done.stdout) << 10
    assert peaks["brackets"] - peaks["letters"] < path.stat().st_size / 2, peaks

def test_a_record_nested_deeper_than_python_decodes_is_quarantined_by_the_batch_path(tmp_path, monkeypatch):
    """Polars reads nesting that Python's json module, which decodes a JSON array's records, gives up on: the file
    goes to the batch path, which quarantines the record for its depth, as the file spells it, and reads the others
    (the plan is decided by the first record)."""
    path = tmp_path / "votes.json"
    deep = '{"model_a": "a", "model_b": "b", "winner": "tie", "x": %s}' % ("[" * 5000 + "]" * 5000)
    path.write_text(json.dumps(CLEAN[:3])[:-1] + ",\n" + deep + "]")
    monkeypatch.setattr(streamed_jsonl, "PREFIX_ROWS", 1)
    result = read_sources([path], columns=PLAIN)
    assert result.battles.height == 3
    assert result.quarantine.select("source_row", "detail", "raw").rows() == [(4, "nested deeper than 512 levels", deep)]


@pytest.mark.parametrize("line, columns", [
    (b'{"model_a": "a", "model_b": "b", "winner": "tie", "judge": "\\ud800x"}', PLAIN),  # polars reads a lone high surrogate as NUL
    (b'{"model_a": {"n": "a"}, "model_b": "b", "winner": "tie"}', PLAIN),  # polars renders a nested value as text
    (b'{"model_a": "a", "model_b": "b", "winner": "tie", "conv_metadata": {"sum_assistant_a_tokens": 1.0}}', STYLED),  # not an integer
    (b'{"model_a": "a", "model_b": "b", "winner": "tie", "conv_metadata": {"header_count_b": {"h2": -1}}}', PLAIN),  # a count to reject
    (b'{"model_a": "a", "model_b": "b", "winner": "tie", "conv_metadata": "{\\"turns\\": 1}"}', PLAIN),  # conv_metadata as text
    (b'{"model_a": "a", "model_b": "b", "winner": "tie", "weight": 2}', PLAIN),  # a key the first lines lacked
])
def test_lines_polars_reads_otherwise_are_read_by_the_batch_path(tmp_path, monkeypatch, line, columns):
    path = tmp_path / "votes.jsonl"
    first = b'{"model_a": "a", "model_b": "b", "winner": "model_a", "conv_metadata": {"sum_assistant_a_tokens": 3}}\n'
    path.write_bytes(first * 3000 + line + b"\n")
    calls = []
    lean = reading.read_lean
    monkeypatch.setattr(reading, "read_lean", lambda *a, **k: calls.append(1) or lean(*a, **k))
    read_sources([path], columns=columns)
    assert calls


def test_counts_read_as_text_are_those_of_the_batch_path(tmp_path, monkeypatch):
    """A plain fit only checks LMArena's counts (read as text): whole numbers in any form pass, as in the batch
    path; any other is a row the batch path reads."""
    path = tmp_path / "votes.jsonl"
    counts = ["1.0", "1e3", "0", "null", "123456789012345", "-0"]
    path.write_bytes(b"".join(b'{"model_a": "a", "model_b": "b", "winner": "tie", "conv_metadata": {"sum_assistant_b_tokens": %s, '
                              b'"header_count_a": {"h3": %s}, "bold_count_b": null}}\n' % (c.encode(), c.encode()) for c in counts))
    with monkeypatch.context() as patched:
        patched.setattr(reading, "read_lean", _no_batch_path)
        fast = read_sources([path], columns=PLAIN)
    _batch_path(monkeypatch)
    assert fast.battles.height == len(counts)
    _assert_same(_comparable(fast), _comparable(read_sources([path], columns=PLAIN)))


runner = CliRunner()


def test_a_hostile_log_fits_as_before_through_the_cli(tmp_path, monkeypatch):
    """A log with damaged lines, rows to reject and blank lines: `arena fit` prints the same board and notes."""
    rows = [{"question_id": f"q{i}", "model_a": MODELS[i % 5], "model_b": MODELS[(i + 2) % 5], "winner": WINNERS[i % 4],
             "conv_metadata": _meta(lambda: i % 5)} for i in range(200)]
    lines = [json.dumps(row).encode() for row in rows]
    lines[17] = b'{"model_a": "gpt-4", "model_b": "gpt-4", "winner": "tie"}'
    lines[40] = b'{"model_a": "gpt-4", "model_b": "claude-3", "winner": "who knows"}'
    lines[90] = b'{"model_a": "gpt-4", "model_b": "claude-3", "winner": "tie", "conv_metadata": {"sum_assistant_a_tokens": -2}}'
    path = tmp_path / "votes.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n\n")
    args = ["fit", str(path), "--ci", "none", "--min-battles", "1", "--style", "both"]
    with monkeypatch.context() as patched:
        patched.setattr(reading, "read_lean", _no_batch_path)
        fast = runner.invoke(app, args)
    assert fast.exit_code == 0, fast.output
    assert "3 row(s) skipped" in fast.output
    _batch_path(monkeypatch)
    batch = runner.invoke(app, args)
    assert (fast.exit_code, fast.stdout, fast.stderr) == (batch.exit_code, batch.stdout, batch.stderr)


#: Parts of a message's content as LMArena's releases write them (``{type, text, image, mimeType}``: a text, an image
#: alone, a text of null), and as they should not be: a text that is no string (polars renders it as text), a part
#: that is no object, a key given twice or spelt with an escape.
USUAL_PARTS = st.builds(lambda text, separators: _object([('"type"', '"text"'), ('"text"', text), ('"image"', "null"), ('"mimeType"', "null")], separators),
                        CONTENTS, SEPARATORS) | st.sampled_from([
    '{"type":"image","text":null,"image":{"bytes":null,"path":"a.png"},"mimeType":"image/png"}', '{"type":"image","image":{"path":"b.png"}}'])
ODD_PARTS = st.sampled_from([
    '{"text":3}', '{"text":1.0}', '{"text":1.5}', '{"text":true}', '{"text":{"a":1}}', '{"text":["x"]}', '{"text": [ ]}', '"x"', "3", "null", "[]", "{}",
    '{"text":"a","text":"b"}', '{"text":null,"text":"b"}', '{"text":"a","text":5}', '{"t\\u0065xt":5}', '{"text" : 2}', '{"x\\"text":1}', '{"text":"x\\u0072"}',
])
PART_MESSAGE = st.builds(
    lambda role, parts, tokens, first: _object([('"role"', role), ('"content"', "[" + ",".join(parts) + "]")][:: 1 if first else -1] + ([('"num_tokens"', "8")] if tokens else [])),
    ROLES, st.lists(USUAL_PARTS, max_size=3), st.booleans(), st.booleans())
ODD_PART_MESSAGES = st.builds(lambda role, parts: _object([('"role"', role), ('"content"', "[" + ",".join(parts) + "]")]),
                              ROLES, st.lists(USUAL_PARTS | ODD_PARTS, min_size=1, max_size=3)) | st.sampled_from([
    '{"role":"user","content":"a text"}', '{"role":"user","content":null}', '{"role":"user","content":{}}', '{"role":"user","content":[]}',
    '{"role":3,"content":[]}', '{"role":null,"content":[]}', '{"content":[{"text":"x"}]}', '{"role":"user"}',
    '{"role":"user","content":[{"text":"x"}],"content":"y"}', '{"role":"user","content":[],"content":[{"text":"y"}]}', '{"role":"user","role":4,"content":[]}',
    '"hello"', "null"])
PART_CONVERSATIONS = st.lists(PART_MESSAGE | PART_MESSAGE | ODD_PART_MESSAGES, max_size=4).map(lambda messages: "[" + ",".join(messages) + "]") | st.sampled_from(
    ["null", "[]", '"[]"', '[{"role":"user","content":"x"}]'])


_FIRST_MESSAGE = '{"role":"user","content":[{"type":"text","text":"Hi","image":null,"mimeType":null}]}'


@st.composite
def part_lines(draw, rows: int, usual: bool):
    """Lines of votes whose conversations are in parts (the arena-human-preference-140k release's shape), the first
    one as the release writes it; unless ``usual``, one or two later ones (or none) with a conversation as logs may
    write it otherwise."""
    odd = set() if usual else draw(st.sets(st.integers(1, rows - 1), max_size=2))
    lines = []
    for i in range(rows):
        first = [_FIRST_MESSAGE] if i == 0 else []  # (lists of no parts alone do not show that the contents are lists of parts)
        sides = [draw(st.lists(PART_MESSAGE, max_size=3).map(lambda messages: "[" + ",".join(first + messages) + "]")) for _ in "ab"]
        if i in odd:
            sides[draw(st.integers(0, 1))] = draw(PART_CONVERSATIONS)
        lines.append(f'{{"conversation_a":{sides[0]},{json.dumps(_vote(i))[1:-1]},"conversation_b":{sides[1]}}}'.encode())
    return lines


#: A line of the release's shape whose part texts are no strings: the batch path infers their type.
_NUMBER_TEXTS = b'{"conversation_a":[{"role":"user","content":[{"type":"text","text":1.0}]}],' + _line(_vote(1))[1:]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@example([_line(_vote(0))[:-1] + b',"conversation_a":[{"role":"user","content":[{"text":"x"}]}]}', _NUMBER_TEXTS], STYLED, (200_000, 64 << 20), 1, "jsonl")
@example([_line(_vote(0))[:-1] + b',"conversation_a":[{"role":"user","content":[{"text":"x"}]}]}', _NUMBER_TEXTS], STYLED, (2, 3), 1, "jsonl")
@example([_line(_vote(0))[:-1] + b',"conversation_a":[{"role":"user","content":[{"text":"x"}]}]}', _NUMBER_TEXTS.replace(b'"user"', b"7")], STYLED, (2, 3), 1, "indent")
@given(part_lines(8, usual=False), st.sampled_from([PLAIN, STYLED]), st.sampled_from([(200_000, 64 << 20), (3, 2500), (2, 3)]), st.integers(1, 8),
       st.sampled_from(["jsonl", "compact", "indent"]))
def test_conversations_in_parts_are_read_as_the_batch_path_reads_them(tmp_path, monkeypatch, lines, columns, batch, prefix, layout):
    """Whatever the parts of a log's messages hold, a streamed read of conversations in parts (JSON lines, or a JSON
    array) gives what the batch path gives (each message's text its parts' texts), or hands the file to it: a part
    text or a role that is no string, a part that is no object, a content that is no list of parts, are not read
    otherwise."""
    path = tmp_path / ("votes.jsonl" if layout == "jsonl" else "votes.json")
    path.write_bytes(b"".join(line + b"\n" for line in lines) if layout == "jsonl" else _array(lines, layout, []))
    _assert_read_alike(monkeypatch, path, InputOptions(batch_rows=batch[0], batch_bytes=batch[1]), columns, prefix)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(part_lines(8, usual=True), st.sampled_from([PLAIN, STYLED]), st.sampled_from(["jsonl", "compact", "indent"]))
def test_conversations_in_parts_as_the_release_writes_them_are_streamed(tmp_path, monkeypatch, lines, columns, layout):
    """Messages in parts with a role and texts, images or both (the release's shape), in JSON lines or a JSON array:
    the streamed read reads them itself (the batch path took three times as long for the release with its texts),
    and gives what the batch path gives."""
    assume(not any(key in line for line in lines for key in SEARCHED_KEYS))
    path = tmp_path / ("votes.jsonl" if layout == "jsonl" else "votes.json")
    path.write_bytes(b"".join(line + b"\n" for line in lines) if layout == "jsonl" else _array(lines, layout, []))
    with monkeypatch.context() as patched:
        patched.setattr(reading, "read_lean", _no_batch_path)
        fast = read_sources([path], columns=columns)
    with monkeypatch.context() as patched:
        _batch_path(patched)
        _assert_same(_comparable(fast), _comparable(read_sources([path], columns=columns)))
