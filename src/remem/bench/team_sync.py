"""A laptop syncing with a team server (``remem team sync``, issue 17) measured on real-shaped turns.

    .venv/bin/python -m remem.bench.team_sync [--turns 3000] [--database-url URL] [--json] [--write]

Alice's laptop imports ``--turns`` real-shaped turns (``remem.bench.realistic``: Claude Code + Codex,
kilobytes of tool output, ~15 % Chinese; six projects) and shares two of its projects with team eng on
a real server (``remem serve`` on 127.0.0.1: SQLite, or PostgreSQL with ``--database-url``). Measured:
alice's first push (turns/s, pages), bob's first pull of the team into his own SQLite (he has a third as many turns of his own, the
same project layout), a second sync of
each with nothing new, and bob's ``turn_start`` before and after the team is mirrored (p50 / p95 over
the same prompts). Embeddings are off on both sides and the server's learner is off, so the numbers are
the sync's own (the server's write path: redaction, dedup, word and trigram indexes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

PROMPTS = ("why does the test fail with a KeyError", "run the migrations again", "fix the flaky upload test",
           "部署脚本报错了怎么办", "where is the retry logic for the billing webhook",
           "add a column to the orders table", "the CI job times out", "refactor the config loader")


NOTE = ("Alice's laptop holds `turns` real-shaped turns in six projects and shares two with team eng; bob "
        "holds a third as many of his own and shares one of the two folders. Push: alice's shared turns to the "
        "server (pages of `team.push_batch`, the server's whole write path); pull: bob's first sync (his one "
        "shared turn up, the team's turns down into his SQLite); re-sync: the next sync with nothing new, which "
        "re-reads the last 120 s of the team's changes (here: all of them, just written). turn_start: bob's "
        "packets for the same 24 prompts, before and after the team is mirrored (ms p50, p95). Embeddings "
        "and the server's learner are off.")


def _quantiles(xs: list[float]) -> tuple[float, float]:
    s = sorted(xs)
    return statistics.median(s), s[min(len(s) - 1, int(0.95 * len(s)))]


def run(turns: int, database_url: str | None = None) -> dict[str, Any]:
    import remem
    from remem import team, teamsync
    from remem.bench.realistic import write_real_history
    from remem.server.testing import Daemon
    from remem.sources.sync import run_sync

    with tempfile.TemporaryDirectory() as d:
        base = Path(d)
        for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "REMEM_DATABASE_URL"):
            os.environ.pop(var, None)
        os.environ.update({"REMEM_EMBEDDING_ENABLED": "false", "REMEM_AUTO_SYNC": "0"})
        srv_env = {"REMEM_LEARN_ENABLED": "0", **({"REMEM_DATABASE_URL": database_url} if database_url else {})}
        with remem.open(base / "server", env=srv_env) as m:
            toks = {n: team.add_user(m.store, n) for n in ("alice", "bob")}
            team.add_team(m.store, "eng", ["alice", "bob"])
        alice_user = base / "alice-user"
        write_real_history(alice_user, turns=turns)
        os.environ["HOME"] = str(alice_user)
        out: dict[str, Any] = {"turns": turns, "server": "postgresql" if database_url else "sqlite"}
        with Daemon(base / "server", env={**srv_env, "HOME": str(base / "server-user")}) as dmn:
            with remem.open(base / "alice", env={"REMEM_DATABASE_URL": f"sqlite:///{base / 'alice' / 'remem.db'}"}) as a:
                run_sync(a, ["claude-code", "codex"])
                shared = ["/home/dev/webshop", "/home/dev/billing-api"]
                teamsync.join(a, dmn.url, toks["alice"], projects=dict.fromkeys(shared, "eng"))
                waiting = sum(teamsync.status(a)["waiting"].values())
                t0 = time.perf_counter()
                res = teamsync.sync(a, pull=False)
                push_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                teamsync.sync(a)
                again_a = time.perf_counter() - t0
                total = a.store.maintenance.table_rows()["turns"]
            sent = sum(v["sent"] for v in res["pushed"].values())
            out.update(alice_turns=total, shared_turns=waiting, push_seconds=round(push_s, 2),
                       push_turns_per_s=round(sent / push_s, 1), alice_resync_seconds=round(again_a, 2))
            bob_user = base / "bob-user"
            write_real_history(bob_user, turns=max(100, turns // 3), seed=2)
            os.environ["HOME"] = str(bob_user)
            with remem.open(base / "bob", env={"REMEM_DATABASE_URL": f"sqlite:///{base / 'bob' / 'remem.db'}"}) as b:
                run_sync(b, ["claude-code", "codex"])
                out["bob_own_turns"] = b.store.maintenance.table_rows()["turns"]
                before = []
                for p in PROMPTS * 3:
                    t0 = time.perf_counter()
                    b.turn_start(p, project="/home/dev/webshop")
                    before.append((time.perf_counter() - t0) * 1000)
                teamsync.join(b, dmn.url, toks["bob"], projects={"/home/dev/webshop": "eng"})
                t0 = time.perf_counter()
                got = teamsync.sync(b)
                pull_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                teamsync.sync(b)
                again_b = time.perf_counter() - t0
                after, hits = [], 0
                for p in PROMPTS * 3:
                    t0 = time.perf_counter()
                    pk = b.turn_start(p, project="/home/dev/webshop")
                    after.append((time.perf_counter() - t0) * 1000)
                    hits += bool(pk["items"])
                written = got["pulled"]["team:eng"]["written"]
            out.update(pulled=written, pull_seconds=round(pull_s, 2), pull_turns_per_s=round(written / pull_s, 1),
                       bob_resync_seconds=round(again_b, 2),
                       bob_turn_start_ms_before=[round(x, 1) for x in _quantiles(before)],
                       bob_turn_start_ms_after=[round(x, 1) for x in _quantiles(after)],
                       bob_packets_with_items=f"{hits}/{len(after)}")
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=3000)
    ap.add_argument("--database-url", default=None, help="the server on PostgreSQL (default: SQLite)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = ap.parse_args()
    got = run(args.turns, args.database_url)
    print(json.dumps(got, indent=1, ensure_ascii=False) if args.json else
          "\n".join(f"{k:28} {v}" for k, v in got.items()))
    if args.write:
        from .results import update_section

        cmd = f"python -m remem.bench.team_sync --turns {args.turns}" + (
            " --database-url postgresql://…" if args.database_url else "")
        rows = "\n".join(f"| {k} | {v} |" for k, v in got.items())
        update_section(f"Issue 17: a laptop syncing with a team server ({got['server']})",
                       f"`{cmd}` (load: {os.getloadavg()[0]:.1f})\n\n{NOTE}\n\n| | |\n|---|---|\n{rows}\n")


if __name__ == "__main__":
    main()
