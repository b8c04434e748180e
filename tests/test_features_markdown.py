"""Markdown counting: LMArena's recipe bit for bit (against FastChat's own code, run here), the default recipe's
code-fence removal, the structural counts, and property tests of the default recipe."""

from __future__ import annotations

import re

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena_cli.features.markdown import (
    MARKDOWN_COUNTS,
    count_markdown,
    python_classes,
    remove_fenced_code,
    structure_counts,
)


# FastChat's fastchat/serve/monitor/add_markdown_info.py, as it runs there (the oracle for the lmarena recipe).
def fastchat_counts(answer: str) -> dict[str, int]:
    for block in re.compile("```([^`]*)```").findall(answer):
        answer = answer.replace(block, "")
    return {
        **{f"h{k}": len(re.findall(rf"^#{{{k}}}\s", answer, re.MULTILINE)) for k in range(1, 7)},
        "ordered": len(re.findall(r"^\s*\d+\.\s", answer, re.MULTILINE)),
        "unordered": len(re.findall(r"^\s*[-*+]\s", answer, re.MULTILINE)),
        "bold_star": len(re.findall(r"\*\*[^*\n]+\*\*", answer)),
        "bold_underscore": len(re.findall(r"__[^_\n]+__", answer)),
    }


def counts(text: str, recipe: str = "default") -> dict[str, int]:
    return count_markdown([text], recipe).row(0, named=True)


def test_python_classes_match_python_re_on_every_code_point():
    everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    series = pl.Series([everything])
    space, digit = python_classes()
    for rust_class, python_class in ((space, r"\s"), (digit, r"\d")):
        ours = set(series.str.extract_all(rust_class).explode().to_list())
        assert ours == set(re.findall(python_class, everything))


def test_lmarena_recipe_quirks():
    # a block's content ("\n# title\n") is deleted everywhere in the answer, not only inside the fences: the
    # header outside the block goes, and "# other" is glued to the line before it
    text = "```\n# title\n```\nintro\n# title\n# other\n"
    assert counts(text, "lmarena")["h1"] == 0 and counts(text, "default")["h1"] == 2
    # an empty block deletes nothing
    assert counts("``````\n# a\n", "lmarena")["h1"] == 1
    # a block whose content is a single newline deletes every newline: the headers merge into one line
    assert counts("# a\n# b\n```\n```\n- c\n", "lmarena") == {**dict.fromkeys(MARKDOWN_COUNTS, 0), "h1": 1}
    assert counts("# a\n# b\n```\n```\n- c\n", "default") == {**dict.fromkeys(MARKDOWN_COUNTS, 0), "h1": 2, "unordered": 1}
    # unclosed fences are not code for LMArena
    assert counts("```python\n# not code for LMArena\n", "lmarena")["h1"] == 1


LMARENA_EXAMPLES = [
    "# A\n## B\n### C\n#### D\n##### E\n###### F\n####### G\n#no\n",
    "1. one\n2. two\n  10. nested\n3.no\n- a\n* b\n+ c\n  - d\n-no\n",
    "**bold** and __also__ and **not\nbold** and ****, __x_y__, **a*b**",
    "intro\n```python\n# comment\nx = 1\n```\n# real\n```\n1. in code\n```\n- after",
    "```a``` text a ```b```\n# h\n",
    "\u2003# em-space before\n\x1c- list after a file separator\n\u0661. arabic-indic digit\n\U00011f50. kawi digit\n",
    "#\n##\t\n-\n1.\n",
    "line\r\n# crlf header\r\n- item\r\n",
    "",
]


@pytest.mark.parametrize("text", LMARENA_EXAMPLES)
def test_lmarena_recipe_equals_fastchat(text):
    assert counts(text, "lmarena") == fastchat_counts(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("#*_-+.`~ \t\n\r\x0b\x1c\u2003\u00850123456789\u0661abc")), max_size=200))
def test_lmarena_recipe_equals_fastchat_on_random_markdown(text):
    assert counts(text, "lmarena") == fastchat_counts(text)


def test_fenced_code_removal():
    assert remove_fenced_code("a\n```py\n# x\n```\nb") == ("a\nb", 1)
    assert remove_fenced_code("a\n~~~\n# x\n") == ("a\n", 1)                       # unclosed: runs to the end
    assert remove_fenced_code("x ``` y\n# h") == ("x ``` y\n# h", 0)               # not at a line start
    assert remove_fenced_code("``` a`b\n# h") == ("``` a`b\n# h", 0)               # backtick in the info string
    assert remove_fenced_code("````\n```\n# in\n````\nb") == ("b", 1)              # shorter fence does not close
    assert remove_fenced_code("~~~\n```\n~~~~\nz") == ("z", 1)                     # other character does not close
    assert remove_fenced_code("  ```js\n# in\n   ```  \nafter") == ("after", 1)    # indented fences
    assert remove_fenced_code("a\n```\nx\n``` y\n# in\n```\nb") == ("a\nb", 1)     # a fence with text is no closer


def test_default_recipe_never_counts_code():
    text = "# Title\n```python\n# comment\n__init__ **kw**\n1. x\n```\n- item\n~~~\n## not\n"
    assert counts(text) == {**dict.fromkeys(MARKDOWN_COUNTS, 0), "h1": 1, "unordered": 1}


def test_structure_counts():
    text = (
        "| a | b |\n|---|:-:|\n| 1 | 2 |\n\n"
        "x | y\n--- | ---\n\n"
        "a line\n---\n\n"                      # a setext underline is no table
        "see [docs](https://x.org/a) or https://y.org/b?c=1, <https://z.org>\n"
        "😀 ❤️ 👍🏽 🇫🇷 👨‍👩‍👧 © ™ 1\n"
    )
    assert structure_counts(pl.Series([text])).row(0, named=True) == {"tables": 2, "links": 3, "emoji": 5}


# -- properties of the default recipe --------------------------------------------------------------------------

MARKDOWN_ALPHABET = st.sampled_from(list("#*_-+.`~ \t\n0123456789ab|[]()") + ["```", "~~~", "**", "__", "\n\n", "1. ", "- ", "# "])
markdown_text = st.lists(MARKDOWN_ALPHABET, max_size=60).map("".join)
anything = st.text(max_size=300)


def fenced(content: str, tilde: bool) -> str:
    """``content`` as a fenced block whose fence no line of the content can close."""
    char = "~" if tilde else "`"
    longest = max((len(run) for run in re.findall(re.escape(char) + "+", content)), default=0)
    fence = char * max(3, longest + 1)
    return f"{fence}{'text' if not tilde else ' any `info`'}\n{content}\n{fence}\n"


def closed(text: str) -> bool:
    """Whether ``text`` does not end inside an open fence (a line appended to it would survive)."""
    return remove_fenced_code(text + "\nsentinel-line")[0].endswith("sentinel-line")


def whole_lines(text: str) -> str:
    """``text`` as whole lines (ending with a newline) that leave no fence open."""
    text = text if text.endswith("\n") or not text else text + "\n"
    for closing in ("", "`" * 60 + "\n", "~" * 60 + "\n"):
        if closed(text + closing):
            return text + closing
    raise AssertionError(f"cannot close the fences of {text!r}")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdown_text, anything, markdown_text, st.booleans())
def test_default_counts_ignore_any_fenced_text(before, content, after, tilde):
    before = whole_lines(before)
    assert remove_fenced_code(before + fenced(content, tilde) + after)[0] == remove_fenced_code(before + after)[0]
    assert counts(before + fenced(content, tilde)) == counts(before)
    assert counts(before + fenced(content, tilde) + after) == counts(before + after)


@settings(max_examples=300, deadline=None)
@given(markdown_text, markdown_text)
def test_default_counts_are_additive_over_independent_blocks(first, second):
    first, second = whole_lines(first), whole_lines(second)
    together = counts(first + second)
    assert together == {k: v + counts(second)[k] for k, v in counts(first).items()}


@settings(max_examples=100, deadline=None)
@given(st.one_of(anything, st.binary(max_size=500).map(lambda b: b.decode("utf-8", errors="replace")), markdown_text))
def test_default_recipe_never_crashes(text):
    result = counts(text)
    assert all(isinstance(v, int) and v >= 0 for v in result.values())
    cleaned, blocks = remove_fenced_code(text)
    assert len(cleaned) <= len(text) and blocks >= 0


def test_huge_lines_and_unbalanced_fences_are_fast():
    texts = [
        "#" * 1_000_000,
        "```\n" * 100_000,
        "````\n" + "```\n# x\n" * 50_000,
        "``` `\n" * 100_000,
        "- " * 500_000 + "\n",
        "**" * 300_000,
    ]
    result = count_markdown(texts)
    assert result.height == len(texts)
    assert result["h1"][2] == 0 and result["unordered"][4] == 1
