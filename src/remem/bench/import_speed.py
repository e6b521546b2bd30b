"""Import throughput: a generated Claude Code history through the real sync engine.

    .venv/bin/python -m remem.bench.import_speed --messages 100000

Targets (issue 3): ≥ 5,000 messages/s without embeddings; re-sync of 1,000 unchanged sessions ≤ 2 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from remem.bench.gen_history import write_claude_history
from remem.bench.results import update_section


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--sessions", type=int, default=1000)
    args = ap.parse_args()
    turns = max(1, args.messages // 4 // args.sessions)
    with tempfile.TemporaryDirectory() as d:
        home = Path(d) / "home"
        n = write_claude_history(home / ".claude/projects", sessions=args.sessions, turns=turns)
        os.environ["HOME"] = str(home)
        os.environ["REMEM_EMBEDDING_ENABLED"] = "false"
        import remem
        from remem.sources.sync import run_sync

        mem = remem.open(Path(d) / "remem")
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        res = run_sync(mem, ["claude-code"])
        first = time.perf_counter() - t0
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        again = run_sync(mem, ["claude-code"])
        resync = time.perf_counter() - t0
        t0 = time.perf_counter()
        idx = mem.index_pending(embed=False)
        trgm = time.perf_counter() - t0
        tot = res["total"]
    rows = [
        ("first import", f"{n / first:,.0f} messages/s", f"{n:,} messages → {tot['turns_added']:,} turns in {first:.1f} s"),
        (f"re-sync, {args.sessions:,} unchanged sessions", f"{resync:.2f} s",
         f"{again['total']['turns_added']} added, {again['sources'][0]['units_unchanged']} unchanged"),
        ("trigram index job (background)", f"{idx['trigram'] / max(trgm, 1e-9):,.0f} turns/s", f"{trgm:.1f} s"),
        ("peak RSS", f"{rss1 / 1024:,.0f} MB", f"{(rss1 - rss0) / 1024:,.0f} MB above start"),
    ]
    lines = ["| measure | result | detail |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    print("\n".join(lines))
    update_section("Import throughput", (
        "A generated Claude Code history (4 messages per turn: prompt, tool_use, tool_result, reply) synced "
        "through the real engine (parse, assemble, pipeline, SQLite), embeddings off. Targets: ≥ 5,000 "
        "messages/s; re-sync of 1,000 unchanged sessions ≤ 2 s.\n\n"
        f"Command: `.venv/bin/python -m remem.bench.import_speed --messages {args.messages} --sessions {args.sessions}`"
        "\n\n" + "\n".join(lines)))


if __name__ == "__main__":
    main()
