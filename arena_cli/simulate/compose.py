"""Answers composed from the text banks, with LMArena counts known by construction, and their token counts.

Every header line adds one to its level, every list item one to its kind, every bold span one to its marker;
prose and fenced code blocks (whose look-alike lines must not be counted) add nothing.
"""

from __future__ import annotations

import math

import numpy as np

from arena_cli.features.tokenizer import load_encoding
from arena_cli.simulate.texts import CODE_BLOCKS, EN_PROMPTS, LANGUAGES, TOPICS, sentence_pool


def _offsets(counts: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(counts)])


def _pick(rng: np.random.Generator, pool_sizes: np.ndarray, counts: np.ndarray) -> list[int]:
    """For each answer, ``counts`` indices into its own pool of ``pool_sizes`` items, flattened. No item repeats
    before the pool is used up: a walk from a random item with a random step coprime with the pool size."""
    largest = int(pool_sizes.max()) if pool_sizes.size else 1
    steps = [[s for s in range(1, n) if math.gcd(s, n) == 1] or [1] for n in range(largest + 1)]
    n_steps = np.array([len(row) for row in steps])
    table = np.array([row + [1] * (n_steps.max() - len(row)) for row in steps])
    start = (rng.random(pool_sizes.size) * pool_sizes).astype(np.int64)
    step = table[pool_sizes, (rng.random(pool_sizes.size) * n_steps[pool_sizes]).astype(np.int64)]
    k = np.arange(int(counts.sum())) - np.repeat(_offsets(counts)[:-1], counts)
    return ((np.repeat(start, counts) + k * np.repeat(step, counts)) % np.repeat(pool_sizes, counts)).tolist()


def _split(seq: list, parts: int) -> list[list]:
    """``seq`` cut into ``parts`` contiguous runs of near-equal length (earlier runs one longer)."""
    size, extra = divmod(len(seq), parts)
    runs, start = [], 0
    for i in range(parts):
        end = start + size + (i < extra)
        runs.append(seq[start:end])
        start = end
    return runs


def _compose(
    sentences: list[str], headers: list[str], bolds: list[str], codes: list[str], n_ordered: int,
    n_unordered: int, bullet: str, nested: bool, space: str,
) -> str:
    """One answer whose LMArena counts are exactly: one per header line, per list item, per bold span; nothing in
    the code blocks or the prose counts. Bold spans go onto list items first, then onto prose sentences."""
    n_items = n_ordered + n_unordered
    items, prose = sentences[:n_items], sentences[n_items:]
    items = [f"{mark}: {text}" for mark, text in zip(bolds, items)] + items[len(bolds):]
    prose_bolds = bolds[n_items:]
    if prose_bolds:
        k = len(prose_bolds)
        prose = prose[:-k] + [f"{mark}: {text}" for mark, text in zip(prose_bolds, prose[-k:])]
    ordered, unordered = items[:n_ordered], items[n_ordered:]

    intro_len = 2 if len(prose) >= len(headers) + 3 else 1
    intro, rest = prose[:intro_len], prose[intro_len:]
    n_paragraphs = max(len(headers), -(-len(rest) // 3))
    paragraphs = [space.join(run) for run in _split(rest, n_paragraphs)] if n_paragraphs else []

    lists = []
    if nested and ordered and unordered:
        lines = []
        for number, (item, subitems) in enumerate(zip(ordered, _split(unordered, len(ordered))), 1):
            lines.append(f"{number}. {item}")
            lines.extend(f"   {bullet} {sub}" for sub in subitems)
        lists.append("\n".join(lines))
    else:
        if ordered:
            lists.append("\n".join(f"{number}. {item}" for number, item in enumerate(ordered, 1)))
        if unordered:
            lists.append("\n".join(f"{bullet} {item}" for item in unordered))
    others = lists + codes
    body = []  # paragraphs alternate with lists and code blocks
    for i in range(max(len(paragraphs), len(others))):
        if i < len(paragraphs):
            body.append(paragraphs[i])
        if i < len(others):
            body.append(others[i])

    blocks = [space.join(intro)]
    if headers:
        for header, section in zip(headers, _split(body, len(headers))):
            blocks.append(header)
            blocks.extend(section)
    else:
        blocks.extend(body)
    return "\n\n".join(blocks)


def compose_texts(
    rng: np.random.Generator, models: dict[str, np.ndarray], battles: dict[str, np.ndarray],
    answers: dict[str, np.ndarray], languages: list[str], categories: list[str],
) -> tuple[list[str], list[list[str]]]:
    """The assistant answers (in ``answers`` order) and each battle's user turns. ``battles`` gives each battle's
    language and category as indices into ``languages`` and ``categories``."""
    pools = {
        (lang, cat): sentence_pool(lang, cat) for lang in languages for cat in categories
    }
    pool_index = {key: i for i, key in enumerate(pools)}
    pool_list = list(pools.values())
    battle = answers["battle"]
    battle_pool = np.array([
        pool_index[(languages[lang], categories[cat])]
        for lang, cat in zip(battles["language"].tolist(), battles["category"].tolist())
    ])
    answer_pool = battle_pool[battle]
    answer_language = battles["language"][battle]
    answer_category = battles["category"][battle]

    n_sentences = answers["sentences"] + answers["ordered"] + answers["unordered"]
    sentence_picks = _pick(rng, np.array([len(p) for p in pool_list])[answer_pool], n_sentences)
    header_sizes = np.array([len(LANGUAGES[lang].headers) for lang in languages])[answer_language]
    header_picks = _pick(rng, header_sizes, answers["headers"])
    n_bold = answers["bold_star"] + answers["bold_underscore"]
    term_sizes = np.array([len(LANGUAGES[lang].terms) for lang in languages])[answer_language]
    term_picks = _pick(rng, term_sizes, n_bold)
    code_pools = [CODE_BLOCKS.get(cat, CODE_BLOCKS["general"]) for cat in categories]
    code_picks = _pick(rng, np.array([len(p) for p in code_pools])[answer_category], answers["code"])

    topics = [
        TOPICS[categories[cat]][int(u * len(TOPICS[categories[cat]]))]
        for cat, u in zip(battles["category"].tolist(), battles["topic"].tolist())
    ]
    s_off, h_off, b_off, c_off = (
        _offsets(c).tolist() for c in (n_sentences, answers["headers"], n_bold, answers["code"])
    )
    levels = answers["header_level"].tolist()
    texts = []
    for j, (b, pool, lang, cat, model, n_star, n_ord, n_unord) in enumerate(zip(
        battle.tolist(), answer_pool.tolist(), answer_language.tolist(), answer_category.tolist(),
        answers["model"].tolist(), answers["bold_star"].tolist(), answers["ordered"].tolist(),
        answers["unordered"].tolist(),
    )):
        bank = LANGUAGES[languages[lang]]
        sentences = [pool_list[pool][k] for k in sentence_picks[s_off[j]:s_off[j + 1]]]
        headers = [
            "#" * (level + 1) + " " + bank.headers[k]
            for level, k in zip(levels[h_off[j]:h_off[j + 1]], header_picks[h_off[j]:h_off[j + 1]])
        ]
        terms = [bank.terms[k] for k in term_picks[b_off[j]:b_off[j + 1]]]
        bolds = [f"**{t}**" for t in terms[:n_star]] + [f"__{t}__" for t in terms[n_star:]]
        codes = [code_pools[cat][k] for k in code_picks[c_off[j]:c_off[j + 1]]]
        text = _compose(
            sentences, headers, bolds, codes, n_ord, n_unord, models["bullet"][model], models["nested_lists"][model],
            bank.space,
        )
        texts.append(text.replace("{t}", topics[b]))

    prompts = []
    followup_picks = rng.random((len(topics), 2))
    prompt_picks = rng.random(len(topics))
    for b, (lang, cat, turns) in enumerate(zip(
        battles["language"].tolist(), battles["category"].tolist(), battles["turn"].tolist()
    )):
        bank = LANGUAGES[languages[lang]]
        choices = EN_PROMPTS[categories[cat]] if languages[lang] == "English" else bank.prompts
        first = choices[int(prompt_picks[b] * len(choices))].replace("{t}", topics[b])
        later = [bank.followups[int(u * len(bank.followups))] for u in followup_picks[b, : turns - 1]]
        prompts.append([first, *later])
    return texts, prompts


def _token_pieces(text: str) -> list[str]:
    """``text`` cut where cl100k's pre-tokenization always has a boundary: before a space that follows ASCII
    punctuation (here '.' and ':'), and after a newline that precedes a non-space. No pre-token spans such a cut,
    so a text's token count is the sum of its pieces' counts. (Plain string replaces: a regex with look-arounds costs
    more than the encoding it saves. The generator's texts contain no NUL, used as the cut mark.)"""
    text = text.replace("\n", "\n\0").replace("\0\n", "\n").replace("\0 ", " ").replace("\0\t", "\t")
    return text.replace(". ", ".\0 ").replace(": ", ":\0 ").split("\0")


def count_tokens(texts: list[str], encoding: str) -> np.ndarray:
    """Token count of each text in a cl100k ``encoding``, equal to ``len(encoding.encode_ordinary(text))`` (the
    tests check it) and several times faster on the generator's texts: their pieces (sentences, list markers,
    header lines, code blocks) repeat across answers, and each distinct piece is encoded once."""
    encode = load_encoding(encoding).encode_ordinary
    pieces = [_token_pieces(text) for text in texts]
    known = {piece: len(encode(piece)) for piece in {p for text_pieces in pieces for p in text_pieces}}
    return np.array([sum(map(known.__getitem__, text_pieces)) for text_pieces in pieces], dtype=np.int64)


