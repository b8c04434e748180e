"""Markdown element counts of response texts, under two recipes.

``lmarena`` is FastChat's ``add_markdown_info.py`` bit for bit: it finds the contents of ```...``` blocks
(regex ``"```([^`]*)```"``) and deletes every occurrence of each content string anywhere in the text, then
counts with its regexes. ``default`` counts with the same regexes after removing fenced code blocks
properly, so code never counts as markdown and text outside code is never altered.

Counting runs on polars (Rust regex, all cores). Python's ``re`` and Rust's regex disagree on what ``\\s``
and ``\\d`` match outside ASCII, so the patterns use explicit classes built from this Python's own
definitions: the counts are exactly those of FastChat's ``re.findall``.
"""

from __future__ import annotations

import re
from functools import lru_cache

import polars as pl

from arena_cli.features.registry import check_recipe
from arena_cli.io.options import DEFAULT_RECIPE

HEADER_LEVELS = range(1, 7)
MARKDOWN_COUNTS: tuple[str, ...] = (*(f"h{k}" for k in HEADER_LEVELS), "ordered", "unordered", "bold_star", "bold_underscore")

#: FastChat's code-block pattern (its group is the block's content).
LMARENA_CODE = re.compile("```([^`]*)```")


def _rust_class(chars: list[int]) -> str:
    """A regex character class (Rust syntax) matching exactly ``chars``."""
    ranges: list[tuple[int, int]] = []
    for c in chars:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    body = "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in ranges)
    return f"[{body}]"


@lru_cache(maxsize=1)
def python_classes() -> tuple[str, str]:
    """Rust classes equal to Python's ``\\s`` and ``\\d`` on str patterns (isspace / isdecimal).

    Every Unicode whitespace and decimal digit lies in planes 0-1, so only those are scanned (~20 ms).
    """
    space, digit = [], []
    for c in range(0x20000):
        ch = chr(c)
        if ch.isspace():
            space.append(c)
        elif ch.isdecimal():
            digit.append(c)
    return _rust_class(space), _rust_class(digit)


@lru_cache(maxsize=1)
def count_patterns() -> dict[str, str]:
    """FastChat's counting regexes, translated to Rust syntax with Python's meaning."""
    s, d = python_classes()
    patterns = {f"h{k}": f"(?m)^#{{{k}}}{s}" for k in HEADER_LEVELS}
    patterns["ordered"] = f"(?m)^{s}*{d}+\\.{s}"
    patterns["unordered"] = f"(?m)^{s}*[-*+]{s}"
    patterns["bold_star"] = r"\*\*[^*\n]+\*\*"
    patterns["bold_underscore"] = r"__[^_\n]+__"
    return patterns


_CELL = r"[ \t:|-]"
#: Structural patterns (this tool's own definitions, on text with code removed).
STRUCTURE_PATTERNS: dict[str, str] = {
    # a line with a pipe, then a delimiter row: only | : - and blanks, with at least one | and one -
    "tables": rf"(?m)^[^\n]*\|[^\n]*\n(?:{_CELL}*\|{_CELL}*-|{_CELL}*-{_CELL}*\|){_CELL}*\r?$",
    "links": r"\[[^\]\n]*\]\([^)\s]*\)|https?://[^\s<>()\[\]]+",
    "emoji": (
        r"[\x{1F1E6}-\x{1F1FF}]{2}"
        r"|(?:\p{Emoji_Presentation}|\p{Extended_Pictographic}\x{FE0F})[\x{1F3FB}-\x{1F3FF}]?"
        r"(?:\x{200D}(?:\p{Emoji_Presentation}|\p{Extended_Pictographic}\x{FE0F}?)[\x{1F3FB}-\x{1F3FF}]?)*"
    ),
}


def lmarena_remove_code(text: str) -> str:
    """FastChat's ``remove_pattern``: delete every occurrence of each block's content, in order."""
    for content in LMARENA_CODE.findall(text):
        text = text.replace(content, "")
    return text


@lru_cache(maxsize=None)
def _closing_fence(char: str, length: int) -> re.Pattern[str]:
    """A closing line for a fence of ``length`` ``char``: as long or longer, nothing else but blanks."""
    return re.compile(rf"\n[ \t]*{re.escape(char * length)}{re.escape(char)}*[ \t\r]*(?=\n|\Z)")


def remove_fenced_code(text: str) -> tuple[str, int]:
    """``text`` without its fenced code blocks, and how many there were.

    A block opens with a line of three or more ``` or ~~~ (any indentation; after ``` an info string without
    backticks) and closes with a line of the same character, at least as long, and nothing else but blanks;
    unclosed, it runs to the end. Exactly the block's lines are removed (through the closing line's newline):
    every character outside code stays as it was.
    """
    pieces: list[str] = []
    kept_from = blocks = 0
    size = len(text)
    next_tick, next_tilde = text.find("```"), text.find("~~~")
    while next_tick >= 0 or next_tilde >= 0:
        at = next_tick if next_tilde < 0 or 0 <= next_tick < next_tilde else next_tilde
        char = text[at]
        run_end = at + 3
        while run_end < size and text[run_end] == char:
            run_end += 1
        line_start = text.rfind("\n", 0, at) + 1
        line_end = text.find("\n", run_end)
        line_end = size if line_end < 0 else line_end
        opens = not text[line_start:at].strip(" \t") and not (char == "`" and "`" in text[run_end:line_end])
        resume = run_end
        if opens:
            pieces.append(text[kept_from:line_start])
            blocks += 1
            closing = _closing_fence(char, run_end - at).search(text, line_end)
            resume = size if closing is None else closing.end()
            kept_from = min(resume + 1, size)  # the closing line's newline goes with the block
        if next_tick >= 0 and next_tick < resume:
            next_tick = text.find("```", resume)
        if next_tilde >= 0 and next_tilde < resume:
            next_tilde = text.find("~~~", resume)
    pieces.append(text[kept_from:])
    return "".join(pieces), blocks


def clean_lmarena(texts: pl.Series) -> pl.Series:
    """Texts after FastChat's code removal (only texts containing ``` can change)."""
    positions = texts.str.contains("```", literal=True).fill_null(False).arg_true()
    if positions.len() == 0:
        return texts
    cleaned = [lmarena_remove_code(t) for t in texts.gather(positions).to_list()]
    return texts.clone().scatter(positions, pl.Series(cleaned, dtype=pl.String))  # scatter works in place


def clean_fenced(texts: pl.Series) -> tuple[pl.Series, pl.Series]:
    """Texts without fenced code blocks, and the number of blocks removed from each."""
    blocks = pl.Series(texts.name, [0] * texts.len(), dtype=pl.Int64)
    positions = texts.str.contains("```|~~~").fill_null(False).arg_true()
    if positions.len() == 0:
        return texts, blocks
    done = [remove_fenced_code(t) for t in texts.gather(positions).to_list()]
    cleaned = texts.clone().scatter(positions, pl.Series([t for t, _ in done], dtype=pl.String))  # scatter works in place
    return cleaned, blocks.scatter(positions, pl.Series([n for _, n in done], dtype=pl.Int64))


def markdown_counts(texts: pl.Series) -> pl.DataFrame:
    """The ten LMArena markdown counts of each (already code-free) text; null text counts as empty."""
    frame = pl.DataFrame({"text": texts.fill_null("")})
    return frame.select(
        pl.col("text").str.count_matches(pattern).cast(pl.Int64).alias(name) for name, pattern in count_patterns().items()
    )


def structure_counts(texts: pl.Series) -> pl.DataFrame:
    """Tables, links and emoji of each (code-free) text."""
    frame = pl.DataFrame({"text": texts.fill_null("")})
    return frame.select(
        pl.col("text").str.count_matches(pattern).cast(pl.Int64).alias(name) for name, pattern in STRUCTURE_PATTERNS.items()
    )


def count_markdown(texts: pl.Series | list[str], recipe: str = DEFAULT_RECIPE) -> pl.DataFrame:
    """Markdown counts of raw response texts under ``recipe`` (``default`` or ``lmarena``)."""
    texts = pl.Series("text", texts, dtype=pl.String) if not isinstance(texts, pl.Series) else texts
    if check_recipe(recipe) == "lmarena":
        return markdown_counts(clean_lmarena(texts))
    return markdown_counts(clean_fenced(texts)[0])

