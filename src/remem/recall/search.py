"""The ``search`` entry point: lexical channels fused by reciprocal rank (hybrid grows here)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..index.text import fts_expr, query_terms, substring_terms, trigram_expr
from ..scope import Scope
from ..store import turns as turnrepo

if TYPE_CHECKING:
    from ..core import Remem

RRF_K = 60


def result_text(row: dict[str, Any], limit: int = 600) -> str:
    text = row["request"]
    if row.get("reply"):
        text += "\n→ " + row["reply"]
    return text if len(text) <= limit else text[: limit - 1] + "…"


def search(mem: Remem, query: str, scope: Scope, *, k: int = 10, explain: bool = False) -> list[dict[str, Any]]:
    db = mem.db
    pool = max(50, k * 5)
    channels: dict[str, list[tuple[str, float]]] = {
        "bm25": turnrepo.search_words(db, scope, fts_expr(query), pool),
        "substring": turnrepo.search_substring(db, scope, trigram_expr(substring_terms(query)), pool),
    }
    words, runs = query_terms(query)
    short = [t for t in [*words, *runs] if len(t) < 3]
    if short and not any(channels.values()):
        channels["scan"] = turnrepo.search_like(db, scope, short[0], pool)
    fused: dict[str, float] = {}
    details: dict[str, dict[str, Any]] = {}
    for name, hits in channels.items():
        for rank, (tid, score) in enumerate(hits, start=1):
            fused[tid] = fused.get(tid, 0.0) + 1.0 / (RRF_K + rank)
            details.setdefault(tid, {})[name] = {"rank": rank, "score": round(score, 4)}
    best = sorted(fused.items(), key=lambda kv: -kv[1])[:k]
    rows = turnrepo.get_many(db, scope, [tid for tid, _ in best])
    out = []
    for tid, score in best:
        row = rows.get(tid)
        if row is None:  # scope re-checked on the final read
            continue
        item = {"id": tid, "score": round(score, 6), "text": result_text(row), "owner": row["owner"],
                "agent": row["agent"], "project": row["project"], "session_id": row["session_id"],
                "created_at": row["created_at"], "updated_at": row["updated_at"], "status": row["status"]}
        if explain:
            item["details"] = {"channels": details.get(tid, {})}
        out.append(item)
    return out
