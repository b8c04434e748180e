"""``arena store check`` and ``arena store repair`` as documents: the problems found or the changes made, then
the store's tables (parts and rows, as its manifest lists them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from arena_cli.render.document import Document, Table
from arena_cli.render.views import meta

if TYPE_CHECKING:
    from arena_cli.io.repair import StoreCheck, StoreRepair


def _tables(tables: dict[str, dict[str, int]]) -> Table:
    frame = pl.DataFrame(
        {"table": list(tables), "parts": [t["parts"] for t in tables.values()], "rows": [t["rows"] for t in tables.values()]},
        schema={"table": pl.String, "parts": pl.Int64, "rows": pl.Int64},
    )
    return Table("tables", frame, "Tables")


def check_document(check: StoreCheck) -> Document:
    frame = pl.DataFrame([p.as_dict() for p in check.problems], schema={"kind": pl.String, "path": pl.String, "detail": pl.String, "severity": pl.String})
    frame = frame.select("severity", "kind", "path", "detail")
    problems = Table("problems", frame, f"Problems of store {check.root}")
    own = {"store": str(check.root), "healthy": check.healthy}
    return Document("store_check", (problems, _tables(check.tables)), meta=meta(check, **own), title="arena store check")


def repair_document(repair: StoreRepair) -> Document:
    frame = pl.DataFrame([c.as_dict() for c in repair.changes], schema={"action": pl.String, "path": pl.String, "detail": pl.String})
    changes = Table("changes", frame, f"Repair of store {repair.root}" + (" (dry run)" if repair.dry_run else ""))
    own = {"store": str(repair.root), "dry_run": repair.dry_run, "battles_set_aside": repair.battles_set_aside,
           "battles_quarantined": repair.battles_quarantined}
    return Document("store_repair", (changes, _tables(repair.tables)), meta=meta(repair, **own), title="arena store repair")
