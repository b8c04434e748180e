"""Message texts survive the JSON readers byte for byte (backslashes, quotes, control characters)."""

from __future__ import annotations

import json

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
