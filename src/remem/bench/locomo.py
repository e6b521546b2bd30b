#!/usr/bin/env python3
"""LoCoMo retrieval benchmark through the real product.

Each conversation is written through ``Remem.add_turns`` (the one write pipeline) into a
temporary home: one session per LoCoMo session, one memory per dialogue turn
(``speaker: text`` + image caption, as the reference script indexes it) with the session's
date as the turn time; embeddings are made by the real background worker. Every question is
asked through the real ``search`` entry point (turns) and ``search_sessions`` (episodes),
scoped to its conversation. Metrics follow ../shared/bench/README.md exactly: gold ids
normalised, items without evidence skipped, recall_any@k / recall_all@k / NDCG@10 (binary),
categories 1–4 headline, category 5 and per category reported separately.

LoCoMo is CC BY-NC: it is read from where the user keeps it and never copied.

    remem bench locomo --data ../shared/bench/locomo-dev.json [--config default] [--model minilm] [--json]
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TURN_KS = (1, 5, 10)
SESSION_KS = (1, 3, 5)
OWNER = "bench"


# ------------------------------------------------------------------------------ data

def norm_evidence(ev: list[str], valid: set[str]) -> list[str]:
    """'D8:6; D9:17' split, 'D:11:26' → 'D11:26', 'D30:05' → 'D30:5'; unknown ids dropped."""
    out = []
    for raw in ev:
        for piece in re.split(r"[;,\s]+", str(raw).strip()):
            if not piece:
                continue
            m = re.fullmatch(r"D:?(\d+):(\d+)", piece)
            if m:
                piece = f"D{int(m.group(1))}:{int(m.group(2))}"
            if piece in valid:
                out.append(piece)
    return list(dict.fromkeys(out))


def turn_text(t: dict[str, Any]) -> str:
    s = f"{t['speaker']}: {t['text']}"
    if t.get("blip_caption"):
        s += f" [shares image: {t['blip_caption']}]"
    return s


def parse_date(s: str) -> float | None:
    """'1:56 pm on 8 May, 2023' → epoch seconds (local time)."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(s.strip(), fmt).timestamp()
        except ValueError:
            continue
    return None


def load(path: str | os.PathLike[str], limit: int | None = None) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list) or not data or "conversation" not in data[0]:
        raise ValueError(f"{path}: not LoCoMo data (a list of samples with 'conversation' and 'qa')")
    convs: list[dict[str, Any]] = []
    for sample in data[:limit]:
        c = sample["conversation"]
        nums = sorted(int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k))
        sessions = []
        for n in nums:
            date = c.get(f"session_{n}_date_time", "")
            sessions.append({"n": n, "date": date, "ts": parse_date(date), "turns": c[f"session_{n}"]})
        valid = {t["dia_id"] for s in sessions for t in s["turns"]}
        qas = []
        for qa in sample.get("qa", []):
            gold = norm_evidence(qa.get("evidence") or [], valid)
            qas.append({"question": qa["question"], "gold": gold, "category": int(qa.get("category", 0))})
        convs.append({"id": sample.get("sample_id", f"conv-{len(convs)}"), "sessions": sessions, "qa": qas})
    return convs


# --------------------------------------------------------------------------- metrics

def ndcg_at(ranked: list[str], gold: set[str], k: int = 10) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in gold)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(gold))))
    return dcg / ideal if ideal else 0.0


def score(ranked: list[str], gold: set[str], ks: tuple[int, ...]) -> dict[str, float]:
    out = {}
    for k in ks:
        top = set(ranked[:k])
        out[f"recall_any@{k}"] = float(any(g in top for g in gold))
        out[f"recall_all@{k}"] = float(all(g in top for g in gold))
    out["ndcg@10"] = ndcg_at(ranked, gold, 10)
    return out


def summarise(rows: list[tuple[int, dict[str, float]]]) -> dict[str, Any]:
    def mean(ms: list[dict[str, float]]) -> dict[str, Any]:
        if not ms:
            return {"n": 0}
        return {"n": len(ms), **{k: round(100 * sum(m[k] for m in ms) / len(ms), 1) for k in ms[0]}}

    return {"cats_1_4": mean([m for c, m in rows if c in (1, 2, 3, 4)]),
            "cat_5": mean([m for c, m in rows if c == 5]),
            "all": mean([m for _, m in rows]),
            "by_category": {CATEGORIES.get(c, str(c)): mean([m for cc, m in rows if cc == c])
                            for c in sorted({c for c, _ in rows})}}


# ------------------------------------------------------------------------------- run

def ingest(mem: Any, conv: dict[str, Any]) -> dict[str, str]:
    """Write one conversation through the pipeline; returns memory id → dia_id."""
    from remem.model import TurnIn

    turns, dia = [], []
    for s in conv["sessions"]:
        base = s["ts"] or 0.0
        for i, t in enumerate(s["turns"]):
            turns.append(TurnIn(request=turn_text(t), owner=OWNER, agent="locomo", project=conv["id"],
                                session_id=f"D{s['n']}", source_key=f"locomo:{conv['id']}:{t['dia_id']}",
                                started_at=base + i if base else None, ended_at=base + i if base else None))
            dia.append(t["dia_id"])
    res = mem.add_turns(turns)
    return {r.id: d for r, d in zip(res.results, dia, strict=True) if r.id}


def overrides(pairs: list[str] | None) -> dict[str, Any]:
    """``key=value`` settings on top of a preset (``rrf_k=10``, ``weights.vector=0.8``)."""
    out: dict[str, Any] = {}
    for p in pairs or []:
        key, _, raw = p.partition("=")
        val: Any = raw
        try:
            val = json.loads(raw)
        except ValueError:
            pass
        out[key.strip()] = val
    return out


def apply_overrides(cfg: Any, sets: dict[str, Any]) -> Any:
    weights = dict(cfg.weights)
    plain = {}
    for k, v in sets.items():
        if k.startswith("weights."):
            weights[k[8:]] = float(v)
        else:
            plain[k] = v
    return cfg.with_(weights=weights, **plain)


def run(data: str, *, config: str = "default", model: str | None = None, limit: int | None = None,
        home: str | None = None, progress: Callable[[str], None] | None = None,
        sets: dict[str, Any] | None = None, database_url: str | None = None) -> dict[str, Any]:
    from remem.core import Remem
    from remem.embed.embedders import DEFAULT_EMBEDDER
    from remem.recall.config import preset
    from remem.recall.search import search, search_sessions
    from remem.scope import Scope

    cfg = apply_overrides(preset(config), sets or {})
    wants_vectors = any(c.startswith("vector") for c in cfg.active())
    model = model or os.environ.get("REMEM_EMBEDDING_MODEL") or DEFAULT_EMBEDDER
    if model == "default":
        model = DEFAULT_EMBEDDER
    convs = load(data, limit)
    say = progress or (lambda _m: None)
    tmp = tempfile.TemporaryDirectory(prefix="remem-bench-") if home is None else None
    env = {"REMEM_EMBEDDING_MODEL": model, "REMEM_EMBEDDING_ENABLED": "true" if wants_vectors else "false"}
    if database_url:
        env["REMEM_DATABASE_URL"] = database_url
    mem = Remem(home or tmp.name, env=env)  # type: ignore[union-attr]
    timing: dict[str, float] = {}
    try:
        t0 = time.perf_counter()
        ids: dict[str, dict[str, str]] = {}
        for conv in convs:
            ids[conv["id"]] = ingest(mem, conv)
        timing["ingest_s"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        mem.index_pending(embed=False)  # entities + trigram: the background index job, run now
        timing["index_s"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        if wants_vectors:
            say(f"embedding {sum(len(v) for v in ids.values())} turns with {model} …")
            mem.embed_pending()
        timing["embed_s"] = round(time.perf_counter() - t0, 2)
        # queries as the daemon embeds them (e5-small: on onnxruntime once its encoder is built)
        onnx = mem.prepare_onnx(wait=True) if wants_vectors else "not used: no vectors"
        turn_rows: list[tuple[int, dict[str, float]]] = []
        sess_rows: list[tuple[int, dict[str, float]]] = []
        lat: list[float] = []
        skipped = 0
        t0 = time.perf_counter()
        for conv in convs:
            scope = Scope.of(OWNER, project=conv["id"])
            to_dia = ids[conv["id"]]
            n_sessions = len(conv["sessions"])
            for qa in conv["qa"]:
                if not qa["gold"]:
                    skipped += 1
                    continue
                q0 = time.perf_counter()
                hits = search(mem.recall, qa["question"], scope, k=10, config=cfg)
                lat.append((time.perf_counter() - q0) * 1000)
                ranked = [to_dia.get(h["id"], "?") for h in hits]
                sess = search_sessions(mem.recall, qa["question"], scope, k=n_sessions, config=cfg)
                sranked = [s["session_id"] for s in sess]
                gold = set(qa["gold"])
                turn_rows.append((qa["category"], score(ranked, gold, TURN_KS)))
                sgold = {g.split(":")[0] for g in gold}
                sess_rows.append((qa["category"], score(sranked, sgold, SESSION_KS)))
            say(f"{conv['id']}: {len(conv['qa'])} questions")
        timing["query_s"] = round(time.perf_counter() - t0, 2)
        if lat:
            lat.sort()
            timing["search_p50_ms"] = round(statistics.median(lat), 2)
            timing["search_p95_ms"] = round(lat[int(0.95 * (len(lat) - 1))], 2)
        emb_model = ""
        if wants_vectors and mem.embedder() is not None:
            emb_model = mem.embedder().model_id
        return {
            "data": str(data), "conversations": len(convs),
            "turns": sum(len(s["turns"]) for c in convs for s in c["sessions"]),
            "questions_scored": len(turn_rows), "questions_skipped": skipped,
            "config": {"name": config, "overrides": sets or {}, "embedding_model": emb_model or None,
                       "onnx": onnx, **cfg.describe()},
            "turn": summarise(turn_rows), "session": summarise(sess_rows), "timing": timing,
        }
    finally:
        mem.close()
        if tmp is not None:
            tmp.cleanup()


def render(res: dict[str, Any]) -> str:
    lines = [f"LoCoMo  {res['data']}  conversations={res['conversations']} turns={res['turns']} "
             f"questions={res['questions_scored']} (skipped {res['questions_skipped']} without evidence)",
             f"config={res['config']['name']} model={res['config']['embedding_model'] or '-'}"]
    for level in ("turn", "session"):
        for part in ("cats_1_4", "cat_5", "all"):
            m = res[level][part]
            vals = "  ".join(f"{k}={v:5.1f}" for k, v in m.items() if k != "n")
            lines.append(f"[{level:7s} {part:8s} n={m['n']:4d}] {vals}")
        for cat, m in res[level]["by_category"].items():
            keys = ("recall_any@5", "recall_all@5", "ndcg@10")
            lines.append(f"    {cat:12s} n={m['n']:4d}  " + "  ".join(f"{k}={m.get(k, 0):5.1f}" for k in keys))
    lines.append("timing: " + "  ".join(f"{k}={v}" for k, v in res["timing"].items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="LoCoMo JSON (e.g. ../shared/bench/locomo-dev.json)")
    ap.add_argument("--config", default="default", help="recall preset: default, bm25, bm25-reference, vector, "
                                                        "lexical, only:CH1,CH2")
    ap.add_argument("--model", default=None, help="embedder (default: REMEM_EMBEDDING_MODEL or the default)")
    ap.add_argument("--limit", type=int, default=None, help="first N conversations only")
    ap.add_argument("--set", dest="sets", action="append", help="override a setting: rrf_k=10, weights.vector=0.8")
    ap.add_argument("--home", default=None, help="reuse this remem home (keeps embeddings between runs)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    a = ap.parse_args(argv)
    res = run(a.data, config=a.config, model=a.model, limit=a.limit, home=a.home, sets=overrides(a.sets),
              progress=None if a.json else (lambda m: print(m, file=sys.stderr)))
    print(json.dumps(res, indent=1) if a.json else render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
