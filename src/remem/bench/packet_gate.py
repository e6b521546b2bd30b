#!/usr/bin/env python3
"""Packet gate: does an agent's packet keep what is related and leave out what is not?

Two gates decide what may enter an agent's packet. A memory found by its vector must be clearly
closer to the prompt than the owner's typical memory (``embed.RELATED_MARGIN``, per model); one
found by the word channels alone must hold a share of the prompt's word weight
(``channels.coverage``, ``PACKET.min_coverage``). This harness

* **calibrates** the margin: for every LoCoMo dev question (categories 1–4) the margin of its
  closest evidence turn (cosine to the query as the vector channel embeds it, minus the
  query's cosine to the mean of the owner's vectors); the value shipped is the 25th percentile,
  rounded (75 % of questions' closest evidence clears it; the lexical channels find much of
  the rest, so the packets lose less, see the table);
* measures **packets** (the real ``turn_start``) under each gate (the rows of its table):
  - LoCoMo, own conversation: share of questions with an evidence turn in the packet, items;
  - LoCoMo, the next conversation (other people, same kind of talk): items injected;
  - coding: a small synthesized store of coding turns (below; written for this harness, not
    taken from any data set), prompts that paraphrase one stored turn (is it in the packet?)
    and prompts about things the store never saw (items injected, share of empty packets);
  - topical stores of 1, 4, 20 and 500 memories all about one thing (synthesized here too):
    do prompts about it get a packet, and unrelated prompts an empty one?

LoCoMo is CC BY-NC: read from ../shared/bench/, never copied. Run from the repo root:

    .venv/bin/python -m remem.bench.packet_gate --data ../shared/bench/locomo-dev.json [--home DIR] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from remem.bench import locomo as L

CODING_OWNER = "coder"
# (request, reply) of a developer's past turns in one project
CODING_TURNS = [
    ("The checkout page times out when the cart has more than 50 items",
     "The cart total ran one SQL query per line item; batched them into a single query in cart/totals.py."),
    ("Why does test_retry_backoff fail intermittently on CI?",
     "It asserted wall-clock time while retry.py sleeps with jitter; injected a fake clock."),
    ("Add a --since flag to the sync command",
     "Added --since (ISO date) to the sync CLI; it filters sessions by their start time."),
    ("Set up pre-commit with ruff and mypy",
     "Added .pre-commit-config.yaml with ruff (lint + format) and mypy in strict mode for src/."),
    ("Stripe webhooks are arriving twice and we double-charge",
     "Stored the event id in a processed_events table with a unique index and skip duplicates."),
    ("Migrate the users table to add an email_verified column",
     "Wrote migration 0042 adding email_verified boolean default false, backfilled from the audit log."),
    ("The Docker image is 1.8 GB, make it smaller",
     "Switched to a multi-stage build on python:3.11-slim and dropped build tools: 240 MB now."),
    ("How do we rotate the JWT signing key without logging everyone out?",
     "Serve both keys in the JWKS for a day; sign with the new key, verify with either."),
    ("Redis memory keeps growing in production",
     "Session keys had no TTL; set a 7-day expiry and added maxmemory-policy allkeys-lru."),
    ("Write a GitHub Actions workflow that runs the tests on every pull request",
     "Added .github/workflows/ci.yml: matrix of Python 3.10-3.12, caches pip, runs pytest -n auto."),
    ("The React settings page re-renders on every keystroke",
     "Memoized the form sections with React.memo and moved the input state down into each field."),
    ("Upgrade Django from 4.2 to 5.0",
     "Bumped Django, replaced the removed USE_L10N setting and fixed two deprecated url() patterns."),
    ("Add rate limiting to the public search API",
     "Token bucket per API key in Redis, 60 requests a minute, 429 with a Retry-After header."),
    ("Celery workers die with SIGKILL during the nightly export",
     "The export loaded every order into memory; it now streams them in chunks of 1,000 rows."),
    ("Generate a CSV report of monthly revenue per country",
     "reports/revenue.py groups paid invoices by month and billing country and writes a CSV."),
    ("Our S3 uploads fail with SignatureDoesNotMatch",
     "The client signed with the wrong region; set region_name='eu-central-1' on the boto3 client."),
    ("Make the login form accessible for screen readers",
     "Added labels tied to inputs, aria-live for errors and a visible focus ring."),
    ("Postgres query for the dashboard takes 9 seconds",
     "Added a composite index on orders(account_id, created_at) and the query now takes 40 ms."),
    ("Translate the onboarding emails to German",
     "Moved the email texts into locale files and added de.json with the German translations."),
    ("Set up Sentry error reporting for the backend",
     "Installed sentry-sdk with the Django integration, release tags from the git sha, 10 % traces."),
    ("把订单导出改成异步任务，避免接口超时",
     "导出接口现在只创建 Celery 任务并返回任务 ID，前端轮询 /exports/<id> 获取下载链接。"),
    ("为什么支付回调偶尔验签失败？",
     "回调里的金额被转成了浮点数，签名时要用原始字符串；改为直接使用请求体原文验签。"),
]
# prompts that mean one stored turn (index into CODING_TURNS) in other words
CODING_RELATED = [
    ("checkout is really slow for big carts, how did we fix that before?", 0),
    ("the retry backoff test is flaky again", 1),
    ("how do I limit sync to recent sessions", 2),
    ("what linters run before each commit", 3),
    ("customers got charged two times from duplicate webhook events", 4),
    ("where did the email verification flag on users come from", 5),
    ("our container image got huge again, what did we do last time", 6),
    ("rotating the token signing key safely", 7),
    ("redis is running out of memory", 8),
    ("how does CI run our test suite on PRs", 9),
    ("the preferences screen is laggy when typing", 10),
    ("what broke when we moved to the new Django version", 11),
    ("how many requests per minute can an API key make on search", 12),
    ("background workers getting OOM killed at night", 13),
    ("revenue per country report", 14),
    ("S3 signature mismatch error when uploading", 15),
    ("screen reader support on the sign in page", 16),
    ("the dashboard query is slow in postgres", 17),
    ("German versions of the welcome emails", 18),
    ("how are backend exceptions reported", 19),
    ("订单导出接口超时怎么处理的", 20),
    ("支付回调签名验证失败的原因", 21),
]
# prompts about things this store never saw
CODING_UNRELATED = [
    "write a bash one-liner that counts lines in all .go files",
    "explain the difference between a mutex and a semaphore",
    "convert this Java class to Kotlin",
    "how do I center a div with flexbox",
    "set up a Kubernetes horizontal pod autoscaler",
    "what does the borrow checker complain about here in my Rust code",
    "draw an architecture diagram in mermaid for a chat app",
    "tune the JVM garbage collector for low latency",
    "write unit tests for the matrix multiplication function in C++",
    "how do I publish an npm package with provenance",
    "compare gRPC and GraphQL for mobile clients",
    "set up a Terraform module for a VPC with three subnets",
    "what is the time complexity of heapsort",
    "create a Swift UI view with a list of photos",
    "用 Go 写一个并发安全的 LRU 缓存",
    "解释一下 TCP 三次握手",
]

# Topical stores: an owner whose memories are all about one thing (here the staging cluster's
# kubeconfig), of 1, 4, 20 and 500 memories from several agents. The store-only IDF weighed the words
# they share at ~0, so "Where is the staging kubeconfig kept?" got an empty packet from 4 memories on.
TOPIC_SIZES = (1, 4, 20, 500)
TOPIC_PROMPTS = ["Where is the staging kubeconfig kept?", "how do I switch kubectl to the staging cluster",
                 "the staging kubeconfig token expired again"]
TOPIC_UNRELATED = ["how do I center a div with flexbox", "write a haiku about autumn leaves",
                   "explain the difference between a mutex and a semaphore"]
_TOPIC = [
    ("Where does the staging kubeconfig live?",
     "The staging kubeconfig is at ~/.kube/staging.yaml; export KUBECONFIG=~/.kube/staging.yaml before kubectl."),
    ("Rotate the staging kubeconfig credentials",
     "Issued a new service-account token for the staging cluster and wrote it into the staging kubeconfig; "
     "the old token is revoked."),
    ("kubectl says the staging context does not exist",
     "The staging kubeconfig names the context shop-staging; run kubectl config use-context shop-staging."),
    ("How does CI get the staging kubeconfig?",
     "CI reads the staging kubeconfig from the STAGING_KUBECONFIG secret and writes it to $RUNNER_TEMP/kubeconfig."),
    ("The staging kubeconfig points at the old API server",
     "Updated the server field of the staging kubeconfig to https://api.staging.internal:6443 after the move."),
    ("Merge the staging kubeconfig with my default one",
     "KUBECONFIG=~/.kube/config:~/.kube/staging.yaml kubectl config view --flatten > ~/.kube/merged.yaml"),
]


def topical_turns(n: int, owner: str, base: float) -> list[Any]:
    """``n`` memories about the staging kubeconfig from three agents, variants of _TOPIC."""
    from remem.model import TurnIn

    agents = ("claude-code", "codex", "gemini")
    out = []
    for i in range(n):
        req, rep = _TOPIC[i % len(_TOPIC)]
        if i >= len(_TOPIC):
            req, rep = f"{req} (again, week {i // len(_TOPIC)})", f"{rep} Checked on node pool {i % 7}."
        out.append(TurnIn(request=req, reply=rep, owner=owner, agent=agents[i % 3], project="infra",
                          session_id=f"{owner}-s{i // 5}", source_key=f"{owner}:{i}", started_at=base + i * 600,
                          ended_at=base + i * 600 + 60))
    return out


GATES = ("before: cosine 0.3", "vector margin", "vector margin + word coverage (shipped)", "off")


def gate_config(mem: Any, name: str) -> Any:
    """The packet configuration a gate names; "margin 0.05" / "coverage 0.3" vary the shipped one."""
    from remem.recall.config import PACKET

    mem.config.override("embedding.related_margin", float(name.split()[1]) if name.startswith("margin ")
                        else "auto")
    if name == "before: cosine 0.3":
        return PACKET.with_(vector_related=False, min_vector_sim=0.3, min_coverage=0.0)
    if name == "vector margin":
        return PACKET.with_(min_coverage=0.0)
    if name == "off":
        return PACKET.with_(vector_related=False, min_vector_sim=0.0, min_coverage=0.0)
    if name.startswith("coverage "):
        return PACKET.with_(min_coverage=float(name.split()[1]))
    return PACKET


def build(home: str, convs: list[dict[str, Any]], say: Any) -> tuple[Any, dict[str, dict[str, str]], list[str]]:
    from remem.core import Remem
    from remem.model import TurnIn

    mem = Remem(home)
    mem.note_access = lambda *a, **k: None  # type: ignore[method-assign]  # packets must not change the store
    ids: dict[str, dict[str, str]] = {}
    for conv in convs:
        rows = [r for r in mem.list(owner=L.OWNER, project=conv["id"], limit=10 ** 7)
                if str(r.get("source_key") or "").startswith(f"locomo:{conv['id']}:")]
        if rows:
            ids[conv["id"]] = {r["id"]: r["source_key"].split(":", 2)[2] for r in rows}
        else:
            ids[conv["id"]] = L.ingest(mem, conv)
    coding = [r["id"] for r in reversed(mem.list(owner=CODING_OWNER, limit=10 ** 7))]  # oldest first
    if not coding:
        base = time.time() - 90 * 86400
        turns = [TurnIn(request=req, reply=rep, owner=CODING_OWNER, agent="claude-code", project="shop",
                        session_id=f"s{i}", source_key=f"coding:{i}", started_at=base + i * 3600,
                        ended_at=base + i * 3600 + 60) for i, (req, rep) in enumerate(CODING_TURNS)]
        coding = [r.id for r in mem.add_turns(turns).results]
    for size in TOPIC_SIZES:
        owner = f"topic{size}"
        if not mem.list(owner=owner, limit=1):
            mem.add_turns(topical_turns(size, owner, time.time() - 30 * 86400))
    mem.index_pending(embed=False)
    say("embedding …")
    mem.embed_pending()
    mem.prepare_onnx(wait=True)
    return mem, ids, coding


def calibrate(mem: Any, convs: list[dict[str, Any]], ids: dict[str, dict[str, str]]) -> dict[str, Any]:
    """Margins of each question's closest evidence turn, as the vector channel sees them."""
    import numpy as np

    from remem.recall import channels
    from remem.recall import search as S
    from remem.recall.query import build as build_query
    from remem.scope import Scope

    emb = mem.embedder()
    margins, cosines = [], []
    for conv in convs:
        scope = Scope.of(L.OWNER, project=conv["id"])
        to_id = {d: i for i, d in ids[conv["id"]].items()}
        corp = channels.scope_corpus(mem.recall, scope, S.OKAPI_SESSION_MAX)
        for qa in conv["qa"]:
            gold = [to_id[g] for g in qa["gold"] if g in to_id]
            if not gold or qa["category"] not in (1, 2, 3, 4):
                continue
            q = S.vector_query(build_query(qa["question"]), corp)
            cache: dict[str, Any] = {}
            vec, model, _ = channels.query_vector(mem.recall, q, cache)
            idx = mem.recall.vectors.get(model, "summary", int(np.asarray(vec).shape[-1]))
            with idx.lock:
                got = idx.vectors_for(gold)
            best = max(float(v @ vec) for v in got.values())
            base = mem.recall.vectors.mean_similarity(scope, vec, model, "summary") or 0.0
            cosines.append(best)
            margins.append(best - base)
    qs = (10, 20, 25, 50)
    pct = {f"p{p}": round(float(np.percentile(margins, p)), 4) for p in qs}
    return {"model": emb.model_id, "n": len(margins), "margin": pct,
            "cosine": {f"p{p}": round(float(np.percentile(cosines, p)), 4) for p in qs}}


def packets(mem: Any, convs: list[dict[str, Any]], ids: dict[str, dict[str, str]], coding: list[str],
            gate: str) -> dict[str, Any]:
    from remem.recall.entry import turn_start
    from remem.scope import Scope

    cfg = gate_config(mem, gate)
    own_hit, own_items, own_learned, other_items, other_any = [], [], [], [], []
    lat = []
    for ci, conv in enumerate(convs):
        scope = Scope.of(L.OWNER, project=conv["id"])
        other = Scope.of(L.OWNER, project=convs[(ci + 1) % len(convs)]["id"])
        for qa in conv["qa"]:
            if not qa["gold"] or qa["category"] not in (1, 2, 3, 4):
                continue
            t0 = time.perf_counter()
            p = turn_start(mem.recall, qa["question"], scope, project=conv["id"], config=cfg)
            lat.append((time.perf_counter() - t0) * 1000)
            got = {ids[conv["id"]].get(i["id"]) for i in p["items"]}
            own_hit.append(bool(got & set(qa["gold"])))
            own_items.append(len(p["items"]))
            own_learned.append(sum(i.get("layer") != "L1" for i in p["items"]))
            if len(convs) > 1:
                o = turn_start(mem.recall, qa["question"], other, project=other.project, config=cfg)
                other_items.append(len(o["items"]))
                other_any.append(bool(o["items"]))
    cscope = Scope.of(CODING_OWNER)
    rel_hit, rel_items = [], []
    for prompt, target in CODING_RELATED:
        p = turn_start(mem.recall, prompt, cscope, project="shop", config=cfg)
        rel_hit.append(coding[target] in {i["id"] for i in p["items"]})
        rel_items.append(len(p["items"]))
    un_items = [len(turn_start(mem.recall, prompt, cscope, project="shop", config=cfg)["items"])
                for prompt in CODING_UNRELATED]

    topic: dict[str, Any] = {}
    for size in TOPIC_SIZES:
        tscope = Scope.of(f"topic{size}")
        packets = [turn_start(mem.recall, p, tscope, project="infra", config=cfg)["items"] for p in TOPIC_PROMPTS]
        off = [len(turn_start(mem.recall, p, tscope, project="infra", config=cfg)["items"]) for p in TOPIC_UNRELATED]
        topic[str(size)] = {"non_empty": round(100.0 * sum(bool(g) for g in packets) / len(packets), 1),
                            "items": round(statistics.fmean(len(g) for g in packets), 2),
                            "unrelated_items": round(statistics.fmean(off), 2)}

    def pc(xs: list[bool]) -> float:
        return round(100.0 * sum(xs) / max(1, len(xs)), 1)

    def mean(xs: list[int]) -> float:
        return round(statistics.fmean(xs), 2) if xs else 0.0

    return {
        "gate": gate,
        "locomo_own": {"n": len(own_hit), "evidence_in_packet": pc(own_hit), "items": mean(own_items),
                       "learned_items": mean(own_learned)},
        "locomo_other": {"items": mean(other_items), "non_empty": pc(other_any)},
        "coding_related": {"n": len(rel_hit), "target_in_packet": pc(rel_hit), "items": mean(rel_items)},
        "coding_unrelated": {"n": len(un_items), "items": mean(un_items),
                             "empty": pc([n == 0 for n in un_items])},
        "turn_start_p50_ms": round(statistics.median(lat), 1) if lat else None,
        "topical": topic,
    }


def render(res: dict[str, Any]) -> str:
    cal = res["calibration"]
    out = [f"Command: `{res['command']}` (model {cal['model']}, {res['seconds']:.0f} s).", "",
           f"Margin of each LoCoMo dev question's closest evidence turn over the owner's mean (n = {cal['n']}): "
           + ", ".join(f"{k} {v}" for k, v in cal["margin"].items())
           + "; its plain cosine: " + ", ".join(f"{k} {v}" for k, v in cal["cosine"].items())
           + f". Shipped: margin {res['margin']}, word coverage {res['coverage']}.", "",
           "Rows \"margin X\" vary the vector margin and \"coverage X\" the word coverage, the other as shipped.", "",
           "| gate | LoCoMo: evidence in packet | items | other conversation: items | non-empty "
           "| coding paraphrase: target in packet | items | unrelated coding prompt: items | empty | turn_start p50 ms |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    if "learned_active" in res:
        out[1:1] = ["", "Learning on: active learned memories " + ", ".join(
            f"{o} {n}" for o, n in res["learned_active"].items()) + "; learned items in a LoCoMo packet: "
            + ", ".join(f"{r['gate']} {r['locomo_own'].get('learned_items')}" for r in res["gates"]) + "."]
    for r in res["gates"]:
        out.append(f"| {r['gate']} | {r['locomo_own']['evidence_in_packet']} % | {r['locomo_own']['items']} "
                   f"| {r['locomo_other']['items']} | {r['locomo_other']['non_empty']} % "
                   f"| {r['coding_related']['target_in_packet']} % | {r['coding_related']['items']} "
                   f"| {r['coding_unrelated']['items']} | {r['coding_unrelated']['empty']} % "
                   f"| {r['turn_start_p50_ms']} |")
    sizes = list(res["gates"][0].get("topical", {}))
    if sizes:
        out += ["", "Topical stores (every memory about the staging kubeconfig, several agents): share of "
                f"{len(TOPIC_PROMPTS)} prompts about it that get a non-empty packet, its items, and the items "
                f"{len(TOPIC_UNRELATED)} unrelated prompts get.", "",
                "| gate | " + " | ".join(f"{n} memories: non-empty | items | unrelated items" for n in sizes) + " |",
                "|---|" + "---|---|---|" * len(sizes)]
        for r in res["gates"]:
            t = r["topical"]
            out.append(f"| {r['gate']} | " + " | ".join(
                f"{t[n]['non_empty']} % | {t[n]['items']} | {t[n]['unrelated_items']}" for n in sizes) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[4] / "shared/bench/locomo-dev.json"))
    ap.add_argument("--home", help="reuse this home (LoCoMo and the coding store are written once)")
    ap.add_argument("--limit", type=int, help="first N conversations")
    ap.add_argument("--margins", default="", help="also gate with these vector margins (comma-separated)")
    ap.add_argument("--coverages", default="", help="also gate with these word coverages (comma-separated)")
    ap.add_argument("--learn", action="store_true",
                    help="learn from every store first (issue 16: packets with the learned section in them); "
                         "a --home keeps what was learned, so give it a copy")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    def say(m: str) -> None:
        print(m, file=sys.stderr, flush=True)

    convs = L.load(args.data, args.limit)
    tmp = tempfile.TemporaryDirectory(prefix="remem-gate-") if args.home is None else None
    t0 = time.perf_counter()
    mem, ids, coding = build(args.home or tmp.name, convs, say)  # type: ignore[union-attr]
    try:
        from remem.embed.embedders import related_margin
        from remem.recall.config import PACKET

        res: dict[str, Any] = {"calibration": calibrate(mem, convs, ids)}
        if args.learn:
            say("learning …")
            owners = [L.OWNER, CODING_OWNER, *(f"topic{size}" for size in TOPIC_SIZES)]
            for owner in owners:
                mem.learn(owner=owner)
            res["learned_active"] = {owner: len(mem.learned(owner=owner)) for owner in owners}
        res["margin"] = related_margin(res["calibration"]["model"])
        res["coverage"] = PACKET.min_coverage
        res["gates"] = []
        extra = [f"margin {m}" for m in args.margins.split(",") if m.strip()]
        extra += [f"coverage {c}" for c in args.coverages.split(",") if c.strip()]
        for gate in [*GATES, *extra]:
            say(f"packets: {gate} …")
            res["gates"].append(packets(mem, convs, ids, coding, gate))
        res["seconds"] = time.perf_counter() - t0
        curve = (f" --margins {args.margins}" if args.margins else "") + \
            (f" --coverages {args.coverages}" if args.coverages else "")
        res["command"] = ("REMEM_EMBEDDING_MODEL=" + os.environ.get("REMEM_EMBEDDING_MODEL", "default")
                          + " .venv/bin/python -m remem.bench.packet_gate --data ../shared/bench/locomo-dev.json"
                          + curve + (" --learn" if args.learn else "") + " --write")
    finally:
        mem.close()
        if tmp is not None:
            tmp.cleanup()
    print(json.dumps(res, indent=2) if args.json else render(res))
    if args.write:
        from results import update_section

        update_section(f"Packet gate ({res['calibration']['model']}{', learning on' if args.learn else ''})",
                       render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
