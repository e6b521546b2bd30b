"""The dataset export (``remem export --dataset``) measured: speed on a real-shaped history and the
placeholders ``ingest.pii.scrub`` puts into text that holds (almost) no personal data.

    .venv/bin/python -m remem.bench.export_speed [--turns 2000] [--json]

1. ``--turns`` real-shaped turns (``remem.bench.realistic``: Claude Code + Codex files, ~15 %
   Chinese) synced into a temporary home, then one OpenAI export (records/s, best of two, in
   process), the incremental re-export (nothing new) and the placeholders it put in.
2. Every ``.py`` file of the Python standard library (and its ``test`` package) through ``scrub``:
   what it replaced, by kind. The stdlib is code, docstrings and test data; its e-mail addresses are
   real authors', its home paths and phone numbers test data; every other placeholder would be a
   false one (versions, timestamps, large constants, hashes).
"""

from __future__ import annotations

import argparse
import glob
import io
import json
import os
import sysconfig
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any


def stdlib_scan() -> dict[str, Any]:
    from remem.ingest.pii import scrub

    root = sysconfig.get_paths()["stdlib"]
    files = sorted(glob.glob(os.path.join(root, "*.py")) + glob.glob(os.path.join(root, "*", "*.py")))
    kinds: Counter[str] = Counter()
    size = 0
    t0 = time.perf_counter()
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        size += len(text)
        kinds.update(scrub(text, home="/nonexistent-home").kinds)
    return {"files": len(files), "mb": round(size / 1e6, 1), "seconds": round(time.perf_counter() - t0, 2),
            "placeholders": dict(sorted(kinds.items()))}


def history_export(turns: int) -> dict[str, Any]:
    from remem.bench.realistic import write_real_history

    with tempfile.TemporaryDirectory() as d:
        home = Path(d) / "home"
        write_real_history(home, turns=turns)
        os.environ["HOME"] = str(home)
        for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
            os.environ.pop(var, None)
        os.environ["REMEM_EMBEDDING_ENABLED"] = "false"
        import remem
        from remem import dataset
        from remem.sources.sync import run_sync

        with remem.open(Path(d) / "remem") as mem:
            run_sync(mem, ["claude-code", "codex"])
            scope = mem.scope()
            best, rep = 1e9, None
            for _ in range(2):
                buf = io.StringIO()
                t0 = time.perf_counter()
                rep = dataset.export(mem, scope, "openai", stream=buf)
                best = min(best, time.perf_counter() - t0)
            out = Path(d) / "train.jsonl"
            dataset.export(mem, scope, "openai", out=out)
            t0 = time.perf_counter()
            again = dataset.export(mem, scope, "openai", out=out)
            incremental = time.perf_counter() - t0
            stored = mem.store.maintenance.table_rows()["turns"]
    assert rep is not None
    return {"turns": stored, "records": rep.written, "seconds": round(best, 2),
            "turns_per_s": round(stored / best), "incremental_seconds": round(incremental, 2),
            "incremental_written": again.written, "filtered": rep.filtered, "duplicate": rep.duplicate,
            "placeholders": dict(sorted(rep.placeholders.items()))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = {"stdlib": stdlib_scan(), "export": history_export(args.turns)}
    print(json.dumps(out, ensure_ascii=False, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
