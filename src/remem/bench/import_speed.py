"""Import throughput: a generated Claude Code history through the real sync engine.

    .venv/bin/python -m remem.bench.import_speed --messages 100000

Targets (issue 3): ≥ 5,000 messages/s without embeddings; re-sync of 1,000 unchanged sessions ≤ 2 s.

    .venv/bin/python -m remem.bench.import_speed --real 3000 [--profile 25]

``--real N``: N real-shaped turns (``remem.bench.realistic``: Claude Code + Codex files) through what
``remem sync`` does (sync, then the entity/trigram backlog), embeddings off; prints turns/s per phase
and, with ``--profile K``, cProfile's top K functions by own time. Target (issue 15): ≥ 600 turns/s.
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
    ap.add_argument("--real", type=int, default=0, help="real-shaped turns instead of the synthetic history")
    ap.add_argument("--profile", type=int, default=0, help="print cProfile's top K (with --real)")
    args = ap.parse_args()
    if args.real:
        real(args.real, args.profile)
        return
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


def real(turns: int, top: int = 0) -> dict[str, float]:
    """Sync ``turns`` real-shaped turns the way ``remem sync`` does; returns the timings."""
    import cProfile
    import io
    import pstats

    from remem.bench.realistic import describe, write_real_history

    with tempfile.TemporaryDirectory() as d:
        home = Path(d) / "home"
        stats = describe(write_real_history(home, turns=turns))
        os.environ["HOME"] = str(home)
        os.environ.pop("CODEX_HOME", None)
        os.environ.pop("CLAUDE_CONFIG_DIR", None)
        os.environ["REMEM_EMBEDDING_ENABLED"] = "false"
        import remem
        from remem.sources.sync import run_sync

        mem = remem.open(Path(d) / "remem")
        prof = cProfile.Profile() if top else None
        c0, t0 = time.process_time(), time.perf_counter()
        if prof:
            prof.enable()
        res = run_sync(mem, ["claude-code", "codex"])
        c1, t1 = time.process_time(), time.perf_counter()
        mem.index_pending(embed=False)
        c2, t2 = time.process_time(), time.perf_counter()
        if prof:
            prof.disable()
        added = res["total"]["turns_added"]
        sizes = mem.store.maintenance.table_rows()
        stored, ents = sizes["turns"], sizes["entity_mentions"]
    out = {"turns": turns, "added": added, "stored": stored, "entity_rows": ents, "sync_s": t1 - t0,
           "backlog_s": t2 - t1, "turns_per_s": added / (t2 - t0), "sync_turns_per_s": added / (t1 - t0),
           "cpu_s": c2 - c0, "cpu_turns_per_s": added / max(c2 - c0, 1e-9),
           "cpu_sync_turns_per_s": added / max(c1 - c0, 1e-9),
           "generated_turn_median": stats["turn_median"], "generated_turn_mean": stats["turn_mean"]}
    print(" ".join(f"{k}={v:,.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in out.items()))
    if prof:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
        print(buf.getvalue())
    return out


if __name__ == "__main__":
    main()
