"""The README's examples that show output cannot drift from the tool: each block marked
``<!-- checked by tests/test_readme.py ... -->`` is run here (Python) or compared with what the command prints
(JSON: every key and row the README shows must be in the output with the same value; markdown: every line
the README shows is a line of the output, in the same order; both may abridge)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena_cli.cli import app

ROOT = Path(__file__).resolve().parents[1]
MARKED = re.compile(r"<!-- checked by tests/test_readme.py: (.*?) -->\n```(\w+)\n(.*?)\n```", re.S)
#: Values that belong to the machine, not to the tool's numbers.
MACHINE = {"versions", "inputs"}


def blocks(language: str) -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    return [(what, body) for what, lang, body in MARKED.findall(text) if lang == language]


def contained(shown: object, actual: object, path: str = "") -> None:
    """Everything ``shown`` has is in ``actual``: dict keys with their values, list items (rows) among its items."""
    if isinstance(shown, dict):
        assert isinstance(actual, dict), path
        for key, value in shown.items():
            assert key in actual, f"{path}.{key} is not in the output"
            if key not in MACHINE:
                contained(value, actual[key], f"{path}.{key}")
    elif isinstance(shown, list) and shown and isinstance(shown[0], dict):
        for row in shown:
            assert row in actual, f"{path}: row {row} is not in the output"
    else:
        assert shown == actual, f"{path}: README shows {shown!r}, the tool prints {actual!r}"


def test_python_api_example_runs():
    (example,) = [body for what, body in blocks("python")]
    done = subprocess.run([sys.executable, "-c", example], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "granite-instruct" in done.stdout


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("readme") / "rd-store"
    result = CliRunner().invoke(app, ["ingest", str(ROOT / "sample_data" / "battles.jsonl.gz"), "--store", str(store)])
    assert result.exit_code == 0, result.output
    return store


def printed(command: str, store: Path) -> str:
    """What the README's command prints, run on a store of the sample data where the README says /tmp/rd-store."""
    result = CliRunner().invoke(app, [str(store) if a == "/tmp/rd-store" else a for a in command.split()[1:]])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize(("command", "shown"), blocks("json"))
def test_json_examples_match_the_output(sample_store, command, shown):
    contained(json.loads(shown), json.loads(printed(command, sample_store)))


@pytest.mark.parametrize(("command", "shown"), blocks("markdown"))
def test_markdown_examples_match_the_output(sample_store, command, shown):
    lines = iter(printed(command, sample_store).splitlines())
    for line in filter(None, shown.splitlines()):
        assert line in lines, f"README shows {line!r}, not printed by {command!r} (or not in this order)"
