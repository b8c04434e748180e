"""The tools `arena fit` is compared with, run as their users run them on a vote log file (pandas reads it
whole, or by columns for parquet; nested ``conv_metadata`` values arrive as Python dicts):

* ``arena-rank``: arena-rank 0.1.1 (``BradleyTerry`` / ``ContextualBradleyTerry.compute_ratings_and_cis``, its
  sandwich intervals included), the style groups built from the dicts with ``pd.json_normalize``;
* ``fastchat``: FastChat's recipe: the style counts by ``conv_metadata.map`` per element (a dict's values summed,
  as ``preprocess_for_style`` does), then scipy L-BFGS-B with FastChat's tolerances on the shared objective.

Run by bench/fit.py in the baselines' virtualenv (pandas, pyarrow, scipy, arena-rank; never the project's):

    python bench/baselines.py arena-rank|fastchat FILE STYLE COUNTS OUT.csv [BOOTSTRAP_ROUNDS (arena-rank)]

COUNTS says where FILE keeps the style counts: ``meta`` (nested conv_metadata), ``flat`` (count columns) or
``none`` (plain fits only).
"""

from __future__ import annotations

import multiprocessing
import sys

import numpy as np

from objective import FLAT_GROUPS, META_GROUPS, OUTCOMES, fit_scores, style_matrix


def read_votes(path: str, counts: str, style: str):
    """The file as a pandas user reads it: parquet by the columns needed, JSON and JSONL whole."""
    import pandas as pd

    outcome = "outcome" if counts == "flat" else "winner"
    if path.endswith(".parquet"):
        columns = ["model_a", "model_b", outcome]
        if style != "none":
            columns += ["conv_metadata"] if counts == "meta" else [f"{m}_{s}" for ms in FLAT_GROUPS.values() for m in ms for s in "ab"]
        return pd.read_parquet(path, columns=columns), outcome
    return pd.read_json(path, lines=path.endswith(".jsonl")), outcome


def group_sums(frame, counts: str, side_value) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per style group, the (a, b) sums of its counts; ``side_value(name)`` gives one count column."""
    groups = META_GROUPS if counts == "meta" else {g: [f"{m}_{{s}}" for m in ms] for g, ms in FLAT_GROUPS.items()}
    return {
        group: tuple(sum(np.asarray(side_value(m.format(s=s)), dtype=float) for m in members) for s in "ab")
        for group, members in groups.items()
    }


def arena_rank(path: str, style: str, counts: str, out: str, bootstrap_rounds: str = "0") -> None:
    import pandas as pd
    from arena_rank.models.bradley_terry import BradleyTerry
    from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
    from arena_rank.utils.data_utils import ContextualPairDataset, PairDataset

    df, outcome = read_votes(path, counts, style)
    if style == "none":
        dataset = PairDataset.from_pandas(df, outcome_col=outcome)
        model = BradleyTerry(n_competitors=len(dataset.competitors))
    else:
        values = pd.json_normalize(df["conv_metadata"].tolist()) if counts == "meta" else df
        sums = group_sums(df, counts, lambda name: values[name])
        for group, (a, b) in sums.items():
            df[group] = (a - b) / (a + b + 1.0)
        dataset = ContextualPairDataset.from_pandas(df, feature_cols=list(sums), outcome_col=outcome)
        model = ContextualBradleyTerry(n_competitors=len(dataset.competitors), n_features=len(sums))
    rounds = int(bootstrap_rounds)
    options = {"ci_method": "bootstrap", "num_bootstrap": rounds} if rounds else {}
    result = model.compute_ratings_and_cis(dataset, significance_level=0.05, **options)
    pd.DataFrame({"model": result["competitors"], "score": list(map(float, result["ratings"]))}).to_csv(out, index=False)


def fastchat(path: str, style: str, counts: str, out: str) -> None:
    import pandas as pd

    df, outcome = read_votes(path, counts, style)
    codes, models = pd.factorize(pd.concat([df["model_a"], df["model_b"]]), sort=True)
    a, b = codes[: len(df)], codes[len(df):]
    y = df[outcome].map(OUTCOMES).fillna(0.5).to_numpy(dtype=float)
    X = None
    if style != "none":
        def element(name: str):  # FastChat's extract_style_feature: a number, or the sum of a dict's values
            return df["conv_metadata"].map(lambda m: sum(m[name].values()) if isinstance(m[name], dict) else m[name]).to_numpy(dtype=float)

        if counts == "meta":
            tops = {g: sorted({m.partition(".")[0] for m in ms}) for g, ms in META_GROUPS.items()}
            X = style_matrix([tuple(sum(element(t.format(s=s)) for t in tops[g]) for s in "ab") for g in tops])
        else:
            X = style_matrix(list(group_sums(df, counts, lambda name: df[name]).values()))
    scores = fit_scores(style, len(models), a, b, y, X, gtol=1e-6, maxiter=100)
    pd.DataFrame({"model": list(models), "score": scores}).to_csv(out, index=False)


if __name__ == "__main__":
    multiprocessing.set_start_method("spawn")  # arena-rank's bootstrap forks; fork after JAX threads deadlocks
    tool, *arguments = sys.argv[1:]
    {"arena-rank": arena_rank, "fastchat": fastchat}[tool](*arguments)
