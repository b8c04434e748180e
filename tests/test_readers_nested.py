"""Message texts survive the JSON readers byte for byte (backslashes, quotes, control characters)."""

from __future__ import annotations

import json

import polars as pl

from arena_cli.io.ingest import read_sources

TRICKY = 'tab\there "quoted" back\\slash literal \\n and real\nnewline \x01 \u2028 é 😀 ```\n# code\n```'


def test_conversation_texts_round_trip_exactly(tmp_path):
    path = tmp_path / "votes.jsonl"
    rows = [
        {"question_id": "q1", "model_a": "a", "model_b": "b", "winner": "model_a", "turn": 1,
         "conversation_a": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": TRICKY}],
         "conversation_b": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "plain"}]},
        {"question_id": "q2", "model_a": "b", "model_b": "a", "winner": "tie", "turn": "1",
         "conversation_a": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "\\"}],
         "conversation_b": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = read_sources([path])
    assert result.quarantine.height == 0
    texts = {r["battle_id"]: r["conversation_a"][1]["content"] for r in result.battles.to_dicts()}
    assert texts == {"q1": TRICKY, "q2": "\\"}


def test_typed_messages_in_parts_read_as_their_texts_and_other_shapes_as_no_conversation():
    """A message's content given as parts reads as the texts of its parts, those given, joined by a newline (no
    part, or parts without texts: an empty text; no content: none); content of another shape (a list of texts, an
    object) is no conversation."""
    from arena_cli.io.fields import PART_SEPARATOR, typed_conversation

    def read(content_type, contents):
        messages = pl.List(pl.Struct({"role": pl.String, "content": content_type}))
        frame = pl.DataFrame({"c": [[{"role": "user", "content": c} for c in row] for row in contents]}, schema={"c": messages})
        expression = typed_conversation("c", messages)
        return None if expression is None else [[m["content"] for m in row] for row in frame.select(expression)["c"].to_list()]

    part = pl.Struct({"type": pl.String, "text": pl.String, "image": pl.String})
    given = [[[{"type": "text", "text": "a", "image": None}, {"type": "image", "text": None, "image": "x"}, {"type": "text", "text": "# b", "image": None}]],
             [[], None]]
    assert read(pl.List(part), given) == [[f"a{PART_SEPARATOR}# b"], ["", None]]
    assert read(pl.List(pl.Struct({"type": pl.String, "image": pl.String})), [[[{"type": "image", "image": "x"}], None]]) == [["", None]]
    assert read(pl.List(pl.Struct({"type": pl.String, "text": pl.Binary})), [[[{"type": "text", "text": b"hi"}]]]) == [["hi"]]
    assert read(pl.List(pl.Null), [[[], None]]) == [["", None]]
    assert read(pl.Array(part, 2), [[[{"type": "text", "text": "a", "image": None}, {"type": "image", "text": None, "image": "x"}]]]) == [["a"]]
    assert read(pl.Array(pl.Struct({"text": pl.Binary}), 1), [[[{"text": b"hi"}]]]) == [["hi"]]
    assert read(pl.List(pl.String), [[["a", "b"]]]) is None
    assert read(pl.Struct({"text": pl.String}), [[{"text": "an object"}]]) is None
