#!/usr/bin/env python3
"""LongMemEval session retrieval through the real product.

LongMemEval is not shipped (too large): users download ``longmemeval_s_cleaned.json``
themselves. For every question its haystack sessions are written through
``Remem.add_turns`` (one memory per user message and the assistant reply after it, the
session's date as the turn time) into a project of its own, and sessions are ranked by the
real ``search_sessions`` entry point. Two readings, as ../shared/bench/README.md defines:

* official (LongMemEval's run_retrieval.py): session key = the user turns only; gold = the
  sessions whose id contains "answer" and that hold a user turn with ``has_answer``; questions
  without such a turn are skipped; recall_any@k, recall_all@k (k = 5, 10), NDCG@10;
* lenient (what others publish, e.g. agentmemory's 95.2 %): full session text (user and
  assistant); gold = ``answer_session_ids``; recall_any@5.

Abstention questions (``_abs``) are skipped in both, as the reference script does.

    remem bench longmemeval --data longmemeval_s_cleaned.json [--limit 50] [--json]
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

OWNER = "bench"
KS = (5, 10)


def parse_date(s: str) -> float | None:
    """'2023/05/20 (Sat) 02:21' → epoch seconds."""
    raw = " ".join(p for p in str(s or "").split() if not p.startswith("("))
    for fmt in ("%Y/%m/%d %H:%M", "%Y/%m/%d"):
        try:
            return datetime.strptime(raw, fmt).timestamp()
        except ValueError:
            continue
    return None


def pair_turns(session: list[dict[str, Any]], user_only: bool) -> list[tuple[str, str]]:
    """(user message, assistant reply) pairs; a leading assistant message becomes its own turn."""
    out: list[tuple[str, str]] = []
    for m in session:
        role, text = m.get("role"), str(m.get("content") or "")
        if role == "user":
            out.append((text, ""))
        elif role == "assistant" and not user_only:
            if out and not out[-1][1]:
                out[-1] = (out[-1][0], text)
            else:
                out.append((text, ""))
    return [(u, a) for u, a in out if u.strip() or a.strip()]


def ndcg_at(ranked: list[str], gold: set[str], k: int = 10) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(gold))))
    return dcg / ideal if ideal else 0.0


def score(ranked: list[str], gold: set[str]) -> dict[str, float]:
    out = {}
    for k in KS:
        top = set(ranked[:k])
        out[f"recall_any@{k}"] = float(any(g in top for g in gold))
        out[f"recall_all@{k}"] = float(all(g in top for g in gold))
    out["ndcg@10"] = ndcg_at(ranked, gold)
    return out


def mean(rows: list[dict[str, float]]) -> dict[str, Any]:
    if not rows:
        return {"n": 0}
    return {"n": len(rows), **{k: round(100 * sum(r[k] for r in rows) / len(rows), 1) for k in rows[0]}}


def ingest(mem: Any, e: dict[str, Any], project: str, user_only: bool) -> None:
    from remem.model import TurnIn

    dates = e.get("haystack_dates") or []
    turns = []
    for si, (sid, sess) in enumerate(zip(e["haystack_session_ids"], e["haystack_sessions"], strict=False)):
        base = parse_date(dates[si]) if si < len(dates) else None
        for i, (u, a) in enumerate(pair_turns(sess, user_only)):
            ts = base + i if base else None
            turns.append(TurnIn(request=u or a, reply=a if u else "", owner=OWNER, agent="longmemeval",
                                project=project, session_id=str(sid), source_key=f"lme:{project}:{sid}:{i}",
                                started_at=ts, ended_at=ts))
    mem.add_turns(turns)


def run(data: str, *, config: str = "default", model: str | None = None, limit: int | None = None,
        home: str | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    from remem.core import Remem
    from remem.embed.embedders import DEFAULT_EMBEDDER
    from remem.recall.config import preset
    from remem.recall.search import search_sessions
    from remem.scope import Scope

    cfg = preset(config)
    wants_vectors = any(c.startswith("vector") for c in cfg.active())
    model = model or os.environ.get("REMEM_EMBEDDING_MODEL") or DEFAULT_EMBEDDER
    model = DEFAULT_EMBEDDER if model == "default" else model
    items = json.loads(Path(data).read_text(encoding="utf-8"))
    if not isinstance(items, list) or (items and "haystack_sessions" not in items[0]):
        raise ValueError(f"{data}: not LongMemEval data (a list of questions with haystack_sessions)")
    items = items[:limit]
    say = progress or (lambda _m: None)
    tmp = tempfile.TemporaryDirectory(prefix="remem-lme-") if home is None else None
    mem = Remem(home or tmp.name, env={"REMEM_EMBEDDING_MODEL": model,  # type: ignore[union-attr]
                                       "REMEM_EMBEDDING_ENABLED": "true" if wants_vectors else "false"})
    official: list[tuple[str, dict[str, float]]] = []
    lenient: list[tuple[str, dict[str, float]]] = []
    skipped = {"abstention": 0, "official: no user-side has_answer turn": 0, "lenient: no answer_session_ids": 0}
    lat: list[float] = []
    t_ingest = t_embed = 0.0
    t_all = time.perf_counter()
    try:
        for n, e in enumerate(items, 1):
            qid = str(e["question_id"])
            if qid.endswith("_abs"):
                skipped["abstention"] += 1
                continue
            sids = [str(s) for s in e["haystack_session_ids"]]
            sessions = e["haystack_sessions"]
            t0 = time.perf_counter()
            ingest(mem, e, f"{qid}:user", user_only=True)
            ingest(mem, e, f"{qid}:full", user_only=False)
            mem.index_pending(embed=False)  # entities + trigram index: the background job, run now
            t_ingest += time.perf_counter() - t0
            t0 = time.perf_counter()
            if wants_vectors:
                mem.embed_pending()
            t_embed += time.perf_counter() - t0
            gold_off = {sid for sid, s in zip(sids, sessions, strict=False) if "answer" in sid
                        and any(t.get("has_answer") for t in s if t.get("role") == "user")}
            gold_len = {str(x) for x in e.get("answer_session_ids") or []}
            qtype = str(e.get("question_type", ""))
            for key, gold, rows, why in (("user", gold_off, official, "official: no user-side has_answer turn"),
                                         ("full", gold_len, lenient, "lenient: no answer_session_ids")):
                if not gold:
                    skipped[why] += 1
                    continue
                q0 = time.perf_counter()
                ranked = [s["session_id"] for s in search_sessions(mem.recall, str(e["question"]),
                                                                   Scope.of(OWNER, project=f"{qid}:{key}"),
                                                                   k=len(sids), config=cfg)]
                lat.append((time.perf_counter() - q0) * 1000)
                rows.append((qtype, score(ranked, gold)))
            if n % 25 == 0:
                say(f"{n}/{len(items)} questions")
        emb = mem.embedder().model_id if wants_vectors and mem.embedder() is not None else None
    finally:
        mem.close()
        if tmp is not None:
            tmp.cleanup()

    def by_type(rows: list[tuple[str, dict[str, float]]]) -> dict[str, Any]:
        return {t: mean([m for tt, m in rows if tt == t]) for t in sorted({t for t, _ in rows})}

    lat.sort()
    return {
        "data": str(data), "questions": len(items), "skipped": skipped,
        "config": {"name": config, "embedding_model": emb, **cfg.describe()},
        "official": {**mean([m for _, m in official]), "by_type": by_type(official)},
        "lenient": {**mean([m for _, m in lenient]), "by_type": by_type(lenient)},
        "timing": {"ingest_s": round(t_ingest, 2), "embed_s": round(t_embed, 2),
                   "total_s": round(time.perf_counter() - t_all, 2),
                   "search_p50_ms": round(statistics.median(lat), 2) if lat else None,
                   "search_p95_ms": round(lat[int(0.95 * (len(lat) - 1))], 2) if lat else None},
    }


def render(res: dict[str, Any]) -> str:
    lines = [f"LongMemEval  {res['data']}  questions={res['questions']}  skipped={res['skipped']}",
             f"config={res['config']['name']} model={res['config']['embedding_model'] or '-'}"]
    for part, note in (("official", "key=user turns, gold=answer sessions with a user has_answer turn"),
                       ("lenient", "key=full session, gold=answer_session_ids")):
        m = res[part]
        vals = "  ".join(f"{k}={v:5.1f}" for k, v in m.items() if k not in ("n", "by_type"))
        lines.append(f"[{part:8s} n={m['n']:4d}] {vals}   ({note})")
        for t, mm in m.get("by_type", {}).items():
            lines.append(f"    {t:27s} n={mm['n']:4d}  recall_any@5={mm.get('recall_any@5', 0):5.1f}  "
                         f"recall_all@5={mm.get('recall_all@5', 0):5.1f}  ndcg@10={mm.get('ndcg@10', 0):5.1f}")
    lines.append("timing: " + "  ".join(f"{k}={v}" for k, v in res["timing"].items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--config", default="default")
    ap.add_argument("--model", default=None)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    res = run(a.data, config=a.config, model=a.model, limit=a.limit,
              progress=None if a.json else (lambda m: print(m, file=sys.stderr)))
    print(json.dumps(res, indent=1) if a.json else render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
