"""What a command reads, said once: where the battles come from (:class:`Source`, with the
:class:`InputOptions` of its files) and which of them it works on (:class:`BattleFilter`).

Plain frozen dataclasses without polars, so the CLI's option groups can build them at start-up cost zero,
and every API call and JSON document describes its inputs the same way (``meta.inputs``, ``meta.filters``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena_cli.bounds import Bounds
from arena_cli.errors import InputError

#: File containers, told apart by extension, else by content (see :mod:`arena_cli.io.files`).
CONTAINERS: tuple[str, ...] = ("jsonl", "json", "csv", "parquet")
#: Logs of LLM judges read in their own shape (see :mod:`arena_cli.io.judged`): arena-hard-auto's judgment
#: files and AlpacaEval's annotations. A directory given in one of these formats is read as every such file in it.
JUDGE_FORMATS: tuple[str, ...] = ("arena-hard", "alpaca-eval")
#: The ``--input-format`` values: a container, ``auto`` (by extension, else by content) or a dialect read from a
#: container so found: ``kaggle`` and the judge formats.
FORMATS: tuple[str, ...] = ("auto", *CONTAINERS, "kaggle", *JUDGE_FORMATS)
#: How many votes a strong verdict of arena-hard-auto (``A>>B``) counts for: its ``weight``, 3 by default.
STRONG_WEIGHT = Bounds("--strong-weight", low=0)
DEFAULT_STRONG_WEIGHT = 3.0

#: Markdown recipes of the style features (see ``arena features``), the default first.
RECIPES: tuple[str, ...] = ("default", "lmarena")
DEFAULT_RECIPE = "default"
#: LMArena's tokenizer encoding, bundled for offline use.
DEFAULT_ENCODING = "cl100k_base"
#: Where a style fit takes LMArena's counts of a battle that has both texts and conv_metadata: the precomputed
#: ``conv_metadata`` counts (what LMArena's published leaderboards used), or counted again from the texts.
COUNTS: tuple[str, ...] = ("precomputed", "texts")
#: Seconds a writer waits for another run's lock on the store before failing (0: fail at once).
LOCK_WAIT = Bounds("--lock-wait", low=0)
#: A text file (JSONL, JSON array, CSV) is read in batches of at most ``batch_rows`` rows and about this many
#: bytes of text; a parquet file in batches of about this many bytes as polars holds them. Bytes bound the
#: memory a read takes whatever the size of a row (a conversation's texts can run to tens of kilobytes).
BATCH_BYTES = 32 << 20
#: Where the store lives when neither ``--store`` nor a non-empty ``$ARENA_STORE`` says.
DEFAULT_STORE = "arena-store"


def default_store_path() -> Path:
    """``$ARENA_STORE`` when set to a path, else ``./arena-store``."""
    return Path(os.environ.get("ARENA_STORE") or DEFAULT_STORE)


@dataclass(frozen=True)
class InputOptions:
    """How to read vote-log files. ``mapping`` overrides where a canonical field comes from (an empty column
    for ``battle_id`` means "ignore any id column, use the content hash"); ``winner_map`` maps extra winner
    labels to outcomes.

    For arena-hard-auto judgments: ``strong_weight`` is the weight of a strong verdict (``A>>B``), ``answers``
    a folder of the benchmark's answer files whose style counts (or texts) are joined to both sides, and
    ``judgment_baseline`` the baseline of lines that name none (else their category's, as arena-hard-auto's)."""

    fmt: str = "auto"
    mapping: Mapping[str, str] = field(default_factory=dict)
    winner_map: Mapping[str, str] = field(default_factory=dict)
    batch_rows: int = 200_000
    batch_bytes: int = BATCH_BYTES
    strong_weight: float = DEFAULT_STRONG_WEIGHT
    answers: Path | None = None
    judgment_baseline: str | None = None

    def __post_init__(self) -> None:
        STRONG_WEIGHT.check(self.strong_weight)
        if self.answers is not None:
            object.__setattr__(self, "answers", Path(self.answers))

    def as_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"input_format": self.fmt, "map": dict(self.mapping), "winner_map": dict(self.winner_map)}
        judged = {
            "strong_weight": self.strong_weight if self.strong_weight != DEFAULT_STRONG_WEIGHT else None,
            "answers": str(self.answers) if self.answers is not None else None,
            "judgment_baseline": self.judgment_baseline,
        }
        meta.update({k: v for k, v in judged.items() if v is not None})
        return meta


@dataclass(frozen=True)
class Source:
    """Where battles come from: vote-log ``files`` read directly (validated as ``arena ingest`` validates,
    nothing stored), else a ``store`` directory (default :func:`default_store_path`)."""

    files: tuple[Path, ...] = ()
    store: Path | None = None
    input: InputOptions = InputOptions()

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", tuple(Path(f) for f in self.files))
        if self.store is not None:
            object.__setattr__(self, "store", Path(self.store))

    @classmethod
    def of(cls, data: Source | str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None, *, store: str | os.PathLike[str] | None = None) -> Source:
        """A source from what a caller has at hand: a :class:`Source`, one file, several files, or a store."""
        if isinstance(data, Source):
            return data
        if data is None:
            return cls(store=Path(store) if store is not None else None)
        many = isinstance(data, Iterable) and not isinstance(data, (bytes, Mapping)) and type(data).__name__ != "DataFrame"  # (a list, a glob's generator)
        paths = (data,) if isinstance(data, (str, os.PathLike)) else tuple(data) if many else None
        if paths is None or not all(isinstance(p, (str, os.PathLike)) for p in paths):
            lazy = " (collect() a LazyFrame first)" if type(data).__name__ == "LazyFrame" else ""
            raise InputError(f"give vote-log files (a path or a list of paths), a store (store=) or a polars DataFrame of battles, not {type(data).__name__}{lazy}")
        return cls(files=tuple(Path(p) for p in paths), store=Path(store) if store is not None else None)

    @property
    def store_path(self) -> Path:
        """The store this source names, or the default one (a files source still finds cached features there)."""
        return self.store if self.store is not None else default_store_path()

    def label(self) -> str:
        """How people see the source: the files, or the store directory."""
        return ", ".join(str(f) for f in self.files) if self.files else str(self.store_path)

    def as_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"files": [str(f) for f in self.files], "store": None if self.files else str(self.store_path)}
        if self.files:
            meta.update(self.input.as_meta())
        return meta


@dataclass(frozen=True)
class BattleFilter:
    """Which battles to use: a SQL boolean ``where`` on battle columns, only battles between ``models``,
    none involving ``exclude_models``."""

    where: str | None = None
    models: tuple[str, ...] | None = None
    exclude_models: tuple[str, ...] | None = None
    where_option: str = field(default="--where", compare=False)  # the option ``where`` came from, as errors name it

    def __post_init__(self) -> None:
        for name in ("models", "exclude_models"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple([value] if isinstance(value, str) else value))

    def as_meta(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "models": list(self.models) if self.models is not None else None,
            "exclude_models": list(self.exclude_models) if self.exclude_models is not None else None,
        }


@dataclass(frozen=True)
class FeatureOptions:
    """How style features are computed from texts: the markdown ``recipe`` and the tokenizer ``encoding``; and
    whether a battle's precomputed LMArena counts (conv_metadata) are used when it has them (``counts``)."""

    recipe: str = DEFAULT_RECIPE
    encoding: str = DEFAULT_ENCODING
    counts: str = "precomputed"

    def as_meta(self) -> dict[str, Any]:
        return {"recipe": self.recipe, "encoding": self.encoding}
