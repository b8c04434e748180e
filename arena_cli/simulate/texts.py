"""The simulator's text banks: model names, prose sentences per language and category, prompts, topics, headers,
bold terms, and fenced code blocks with decoys.

Prose never contains '*', '_', '#', backticks, or a line start that the LMArena regexes would count (a digit run
followed by '. ', or '-', '*', '+' followed by whitespace): every count of a composed answer comes from the parts
the composer adds (``compose``).
"""

from __future__ import annotations

from dataclasses import dataclass

MODEL_FAMILIES = (
    "atlas", "borealis", "cirrus", "dorado", "ember", "fable", "granite", "helix", "iris", "juniper", "kestrel",
    "lumen", "meridian", "nimbus", "orion", "pulsar", "quill", "raven", "sable", "tundra", "umbra", "vega",
    "willow", "xenon", "yarrow", "zephyr",
)
MODEL_VARIANTS = ("7b", "13b", "70b", "mini", "pro", "large", "chat", "turbo", "flash", "instruct", "ultra", "lite")

EN_GENERIC = (
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
EN_BY_CATEGORY = {
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
EN_CREATIVE = (
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
EN_PROMPTS = {
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
TOPICS = {
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
class Language:
    space: str  # between sentences
    sentences: tuple[str, ...]
    headers: tuple[str, ...]
    terms: tuple[str, ...]
    prompts: tuple[str, ...]
    followups: tuple[str, ...]


LANGUAGES: dict[str, Language] = {
    "English": Language(
        space=" ",
        sentences=EN_GENERIC,
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
    "Chinese": Language(
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
    "Spanish": Language(
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
    "German": Language(
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
    "French": Language(
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
    "Russian": Language(
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
    "Japanese": Language(
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
CODE_BLOCKS = {
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
CODE_BLOCKS["general"] = CODE_BLOCKS["coding"][:3]


def sentence_pool(language: str, category: str) -> tuple[str, ...]:
    if language != "English":
        return LANGUAGES[language].sentences
    if category == "creative_writing":
        return EN_CREATIVE
    return EN_GENERIC + EN_BY_CATEGORY.get(category, ())

