"""Write throughput: N synthetic turns through the real pipeline, no embeddings.

    .venv/bin/python -m remem.bench.write_throughput --turns 100000

Prints turns/s for batched writes (the importer path) and single writes (the CLI/hook path),
and database size per 100k turns; updates the "Write throughput" section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import remem
from remem.bench.results import update_section
from remem.model import ToolCall, TurnIn

WORDS = ("fix bug test deploy database migration login cache redis postgres docker build error "
         "refactor module function class import config yaml json api endpoint request response "
         "timeout retry queue worker thread lock index query schema table column user session").split()
ZH = "数据库 迁移 登录 错误 修复 缓存 部署 测试 接口 配置 用户 会话".split()


def synth(i: int, rng: random.Random) -> TurnIn:
    req = " ".join(rng.choices(WORDS, k=rng.randint(8, 30)))
    if i % 10 == 0:
        req += " " + "".join(rng.choices(ZH, k=4))
    reply = " ".join(rng.choices(WORDS, k=rng.randint(20, 60)))
    actions = [ToolCall(name="Bash", input=f"pytest tests/test_{rng.choice(WORDS)}.py",
                        output=" ".join(rng.choices(WORDS, k=20)))] if i % 3 == 0 else []
    return TurnIn(request=req, reply=reply, actions=actions, agent=rng.choice(["claude-code", "codex", "gemini"]),
                  project=f"proj{i % 20}", session_id=f"s{i // 10}", source_key=f"bench:{i}",
                  source_name="bench", message_ids=[f"m{i}u", f"m{i}a"], started_at=1.7e9 + i)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--single", type=int, default=2000, help="turns written one transaction each")
    args = ap.parse_args()
    rng = random.Random(7)
    turns = [synth(i, rng) for i in range(args.turns)]
    with tempfile.TemporaryDirectory() as d:
        mem = remem.open(Path(d) / "home")
        t0 = time.perf_counter()
        for i in range(0, len(turns), args.batch):
            mem.add_turns(turns[i : i + args.batch])
        batched = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in (Path(d) / "home").glob("remem.db*"))
        stored = mem.stats()["turns"]
        single_turns = [synth(args.turns + i, rng) for i in range(args.single)]
        t0 = time.perf_counter()
        for t in single_turns:
            mem.add_turns([t])
        single = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in range(0, len(turns), args.batch):
            mem.add_turns(turns[i : i + args.batch])
        redo = time.perf_counter() - t0
    rows = [
        (f"batched writes (batch {args.batch})", f"{args.turns / batched:,.0f} turns/s", f"{batched:.1f} s for {stored:,}"),
        ("single-turn transactions", f"{args.single / single:,.0f} turns/s", f"{single:.1f} s for {args.single:,}"),
        ("re-import (all duplicates)", f"{args.turns / redo:,.0f} turns/s", f"{redo:.1f} s"),
        ("database size", f"{size / 1e6 * 100_000 / args.turns:,.0f} MB per 100k turns",
         f"{size / 1e6:.0f} MB total"),
    ]
    lines = ["| measure | result | detail |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    print("\n".join(lines))
    update_section("Write throughput", (
        "Synthetic turns (8–30 word requests, 20–60 word replies, a tool call on every third turn, 10 % with "
        "Chinese) through the real pipeline (normalize, redact, dedup, FTS word + trigram + CJK indexes), "
        "embeddings off. Target: ≥ 3,000 turns/s.\n\n"
        f"Command: `.venv/bin/python -m remem.bench.write_throughput --turns {args.turns}`\n\n" + "\n".join(lines)))


if __name__ == "__main__":
    main()
