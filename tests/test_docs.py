"""The README documents the whole command line: a section per command, help text for every parameter, and
every long option mentioned (in its command's section, or where its shared declaration is documented)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer.main

from arena_cli.cli import app

README = Path(__file__).resolve().parents[1] / "README.md"
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
COMMAND_HEADING = re.compile(r"^arena ([\w-]+(?: [\w-]+)?)$")  # a command, or a group's command
FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")


def _commands(command=None, path: tuple[str, ...] = ()) -> Iterator[tuple[str, object]]:
    """Every runnable command of the typer app, as ("name" or "group name", click command), walking groups."""
    command = command or typer.main.get_command(app)
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if getattr(sub, "commands", None):
            yield from _commands(sub, (*path, name))
        else:
            yield " ".join((*path, name)), sub


COMMANDS = dict(_commands())


def _long_flags(param) -> list[str]:
    return [flag for flag in (*param.opts, *param.secondary_opts) if flag.startswith("--") and flag != "--help"]


def _options(command) -> list:
    return [p for p in command.params if p.param_type_name == "option"]


def _lines(text: str) -> Iterator[tuple[str, bool]]:
    """README lines with whether each is inside a fenced code block (``` or ~~~, any indentation, longer
    fences enclosing shorter ones), so example output with its own headings is not taken for sections."""
    fence = None
    for line in text.splitlines():
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
            yield line, fence is not None
        else:
            stripped = line.strip()
            if match and stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            yield line, True


def _sections(text: str) -> tuple[dict[str, str], str]:
    """``{command: text of its '### arena NAME' section}`` and the text of '## Commands' before the first
    command section (where the shared options are described)."""
    sections: dict[str, list[str]] = {}
    preamble: list[str] = []
    current: list[str] | None = None
    in_commands = False
    for line, fenced in _lines(text):
        heading = None if fenced else HEADING.match(line)
        if heading and len(heading.group(1)) > 3 and current is not None:
            heading = None  # a sub-heading belongs to the section it is in
        if heading:
            title = heading.group(2)
            command = COMMAND_HEADING.match(title)
            in_commands = (in_commands and len(heading.group(1)) > 2) or title == "Commands"
            if command:
                current = sections.setdefault(command.group(1), [])
                continue
            current = preamble if in_commands and not sections else None
            continue
        if current is not None:
            current.append(line)
    return {name: "\n".join(body) for name, body in sections.items()}, "\n".join(preamble)


def _mentions(text: str, flag: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


@pytest.fixture(scope="module")
def readme() -> str:
    return README.read_text(encoding="utf-8")


def test_the_app_has_commands():
    assert len(COMMANDS) >= 10, f"expected the arena commands, found {sorted(COMMANDS)}"


def test_every_command_has_a_readme_section(readme):
    sections, _ = _sections(readme)
    missing = sorted(set(COMMANDS) - set(sections))
    stale = sorted(set(sections) - set(COMMANDS))
    assert not missing, (
        f"README.md has no '### arena NAME' section for: {', '.join(missing)}. "
        "Add one under '## Commands' (what it is for, a runnable example, its options)."
    )
    assert not stale, f"README.md documents commands that do not exist (any more): {', '.join(stale)}"
    empty = sorted(name for name, body in sections.items() if not body.strip())
    assert not empty, f"README.md sections with no text: {', '.join(empty)}"


def test_every_command_and_parameter_has_help_text():
    missing = []
    for name, command in COMMANDS.items():
        if not (command.help or "").strip():
            missing.append(f"arena {name} (the command's docstring)")
        for param in command.params:
            if not (getattr(param, "help", None) or "").strip():
                label = "/".join(param.opts) if param.param_type_name == "option" else f"argument {param.name.upper()}"
                missing.append(f"arena {name} {label}")
    assert not missing, "no help text (--help shows nothing for them): " + "; ".join(missing)


def test_every_long_option_is_mentioned_in_the_readme(readme):
    missing = sorted(
        {f"arena {name} {flag}" for name, command in COMMANDS.items() for p in _options(command) for flag in _long_flags(p) if not _mentions(readme, flag)}
    )
    assert not missing, "options README.md never mentions: " + ", ".join(missing)


def test_every_long_option_is_documented_where_its_command_is(readme):
    """An option must appear in its command's section, unless it is a shared declaration (the same flag with
    the same help text on several commands), which may be documented once: in the shared options before the
    first command section, or in the section of another command that has it."""
    sections, preamble = _sections(readme)
    declarations: dict[tuple[str, str], set[str]] = {}
    for name, command in COMMANDS.items():
        for p in _options(command):
            for flag in _long_flags(p):
                declarations.setdefault((flag, p.help or ""), set()).add(name)
    undocumented = []
    for name, command in COMMANDS.items():
        for p in _options(command):
            for flag in _long_flags(p):
                if _mentions(sections.get(name, ""), flag):
                    continue
                sharing = declarations[(flag, p.help or "")] - {name}
                if sharing and (_mentions(preamble, flag) or any(_mentions(sections.get(other, ""), flag) for other in sharing)):
                    continue
                undocumented.append(f"arena {name} {flag}")
    assert not undocumented, (
        "options not described in their command's README section (nor, for options shared with other "
        "commands, in the shared options or those commands' sections): " + ", ".join(sorted(undocumented))
    )
