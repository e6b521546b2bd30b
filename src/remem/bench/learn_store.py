"""What learning costs in a real home: packet size with and without learned memories, database growth,
learn speed through the store.

For each derive-dev project (``raw/<id>/*.md``), a throwaway home (its own SQLite file, whatever
database the environment names) imports the SpecStory exports the way a user's does (``remem sources
add specstory --path <project>``: the files sit in the project's ``.specstory/history``), then:

* **packets before**: ``turn_start`` for the probe prompts of the project's labels (``probes``; their
  prompts are read from the history, as ``learn`` does), with the project, before anything is learned:
  today's packets;
* **learn**: ``Remem.learn(project=…)`` (the job the daemon runs after a sync), timed, and the database
  size before and after (the home closed and reopened, so SQLite's log is checkpointed);
* **packets after**: the same prompts again, now with the learned section, and the session's start
  context (``session_start``: the project's core facts and rules, once per session).

Packet size is the ``tokens`` the packet reports (the budget's unit). Both rounds see the whole history
(this measures size, not what was known when: ``learn_packets`` does that), and each ``turn_start``
counts as an access to the turns it shows, as it does for a user: the second round's turns can differ
slightly for that reason too. Embeddings are off by default (``--model`` turns them on: slower, and the
numbers of the vector channels join).

    python -m remem.bench.learn_store --data ../shared/bench/derive-dev [--labels bench/learn-labels] [--json]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .learn import arguments, load_labels, read_project, resolve_probes, sessions


def _mean(xs: list[float]) -> float | None:
    return round(statistics.fmean(xs), 1) if xs else None


def _packets(mem: Any, prompts: list[str], project: str) -> list[tuple[int, int]]:
    """(tokens, learned memories) of each prompt's ``turn_start`` packet."""
    out = []
    for p in prompts:
        got = mem.turn_start(p, project=project)
        learned = sum(1 for i in got.get("items") or [] if i.get("layer") in ("L2", "L3"))
        out.append((int(got.get("tokens") or 0), learned))
    return out


def _summary(before: list[tuple[int, int]], after: list[tuple[int, int]]) -> dict[str, Any]:
    """Packet size before → after learning, and how many packets hold a learned memory."""
    b, a = [float(t) for t, _ in before], [float(t) for t, _ in after]
    return {"prompts": len(after), "packet_tokens_before": _mean(b), "packet_tokens_after": _mean(a),
            "packet_tokens_ratio": round(statistics.fmean(a) / statistics.fmean(b), 3) if a and b and any(b) else None,
            "packet_learned_items": _mean([float(n) for _, n in after]),
            "packets_with_learned": round(sum(n > 0 for _, n in after) / len(after), 3) if after else None}


def _size(home: str, env: dict[str, str]) -> int:
    from remem.core import Remem

    mem = Remem(home, env=env)
    try:
        return int(mem.store.maintenance.size_bytes())
    finally:
        mem.close()


def home_env(tmp: str, model: str | None) -> dict[str, str]:
    """A throwaway home's settings: its own SQLite file whatever database the caller's environment names,
    no background learn, embeddings only with ``model``."""
    return {"HOME": tmp, "REMEM_DATABASE_URL": "sqlite:///remem.db", "REMEM_LEARN_ENABLED": "0",
            **({"REMEM_EMBEDDING_MODEL": model} if model else {"REMEM_EMBEDDING_ENABLED": "0"})}


def place_exports(raw_dir: str, folder: Path) -> None:
    """A project's SpecStory sessions where a user's are: ``folder/.specstory/history``."""
    history = folder / ".specstory" / "history"
    history.mkdir(parents=True, exist_ok=True)
    for f in sessions(raw_dir):
        shutil.copyfile(os.path.join(raw_dir, f), history / f)


def measure(raw_dir: str, project: str, labels: dict[str, Any] | None, *,
            model: str | None = None) -> tuple[dict[str, Any], list[tuple[int, int]], list[tuple[int, int]]]:
    """One project's import, learn and database growth (its row), and its packets before and after
    learning (``_packets``)."""
    from remem.core import Remem
    from remem.sources.custom import add_project_folders

    prompts: list[str] = []
    if labels is not None:
        resolved = resolve_probes(labels.get("probes") or [], read_project(raw_dir, project))
        prompts = [p["prompt"] for p in resolved["probes"] if (p.get("prompt") or "").strip()]
    with tempfile.TemporaryDirectory(prefix="remem-learn-store-") as tmp:
        folder = Path(tmp, "projects", project)
        place_exports(raw_dir, folder)
        home = os.path.join(tmp, "home")
        env = home_env(tmp, model)
        mem = Remem(home, env=env)
        try:
            t0 = time.perf_counter()
            res = add_project_folders(mem, "specstory", [str(folder)], env=env)
            import_s = time.perf_counter() - t0
            if res.get("status") != "imported":
                raise RuntimeError(f"{project}: {res.get('steps')}")
            mem.index_pending(embed=bool(model))
            turns = int(mem.stats()["turns"])
        finally:
            mem.close()
        before_bytes = _size(home, env)
        mem = Remem(home, env=env)
        try:
            before = _packets(mem, prompts, str(folder))
            t0 = time.perf_counter()
            mem.learn(project=str(folder))
            learn_s = time.perf_counter() - t0
            learned = mem.learned(project=str(folder), status="all")
            after = _packets(mem, prompts, str(folder))
            start = mem.session_start(project=str(folder))
        finally:
            mem.close()
        after_bytes = _size(home, env)
    growth = after_bytes - before_bytes
    active = sum(1 for m in learned if m.get("status") == "active")
    row = {
        "turns": turns, "import_s": round(import_s, 2), "learn_s": round(learn_s, 4),
        "learn_turns_per_s": round(turns / learn_s) if learn_s > 0 else None,
        "learned": len(learned), "active": active,
        "db_bytes_before": before_bytes, "db_bytes_after": after_bytes, "db_growth_bytes": growth,
        "db_growth_share": round(growth / before_bytes, 4) if before_bytes else None,
        "db_growth_bytes_per_1000_turns": round(growth * 1000 / turns) if turns else None,
        **_summary(before, after), "session_start_tokens": int(start.get("tokens") or 0),
    }
    return row, before, after


def run(data: str, labels_dir: str | None, projects: list[str] | None = None, *, model: str | None = None,
        say: Any = None) -> dict[str, Any]:
    say = say or (lambda _m: None)
    raw = os.path.join(data, "raw")
    names = projects or sorted(d for d in os.listdir(raw) if os.path.isdir(os.path.join(raw, d)))
    per: dict[str, Any] = {}
    before: list[tuple[int, int]] = []
    after: list[tuple[int, int]] = []
    for p in names:
        row, b, a = measure(os.path.join(raw, p), p, load_labels(labels_dir, p) if labels_dir else None, model=model)
        before += b
        after += a
        per[p] = row
        say(f"{p}: {row['turns']} turns, packets {row['packet_tokens_before']} → {row['packet_tokens_after']} tokens, "
            f"database +{row['db_growth_bytes']} bytes")
    turns = sum(r["turns"] for r in per.values())
    learn_s = sum(r["learn_s"] for r in per.values())
    growth = sum(r["db_growth_bytes"] for r in per.values())
    start = sum(r["db_bytes_before"] for r in per.values())
    overall = {
        "projects": len(per), "turns": turns, "model": model or "none (lexical recall)", **_summary(before, after),
        "session_start_tokens": _mean([float(r["session_start_tokens"]) for r in per.values()]),
        "learn_turns_per_s": round(turns / learn_s) if learn_s > 0 else None,
        "db_growth_bytes_per_1000_turns": round(growth * 1000 / turns) if turns else None,
        "db_growth_share": round(growth / start, 4) if start else None,
    }
    return {"projects": per, "overall": overall}


def render(rep: dict[str, Any]) -> str:
    lines = ["project          turns  learned  packet tokens before → after  with learned  start  "
             "learn turns/s  db growth"]
    for p, r in rep["projects"].items():
        lines.append(f"{p:15s} {r['turns']:6d}  {r['active']:3d}/{r['learned']:<4d} {r['packet_tokens_before']!s:>8} → "
                     f"{r['packet_tokens_after']!s:<8}        {r['packets_with_learned']!s:>6}  "
                     f"{r['session_start_tokens']:5d}  {r['learn_turns_per_s']!s:>13}  "
                     f"{r['db_growth_bytes']:+d} B ({r['db_growth_share']:.1%})")
    o = rep["overall"]
    lines.append(f"overall: {o['turns']} turns, {o['prompts']} prompts; packet tokens {o['packet_tokens_before']} → "
                 f"{o['packet_tokens_after']} (×{o['packet_tokens_ratio']}); learned items in "
                 f"{o['packets_with_learned']} of packets; session start {o['session_start_tokens']} tokens; "
                 f"learn {o['learn_turns_per_s']} turns/s; database +{o['db_growth_bytes_per_1000_turns']} B per "
                 f"1,000 turns ({o['db_growth_share']:.1%})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__)
    ap.add_argument("--model", default=None, help="embed with this model (default: embeddings off)")
    a = ap.parse_args(argv)
    if not os.path.isdir(os.path.join(a.data, "raw")):
        print(f"no raw/ folder under {a.data}", file=sys.stderr)
        return 2
    rep = run(a.data, a.labels, a.project, model=a.model, say=lambda m: print(m, file=sys.stderr))
    print(json.dumps(rep, indent=1) if a.json else render(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
