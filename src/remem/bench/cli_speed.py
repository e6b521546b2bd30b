"""How long ``remem search`` and ``remem recall`` take from a fresh shell, with and without the daemon.

    python -m remem.bench.cli_speed [--turns 5000] [--runs 5] [--home DIR] [--before SRC]

Builds (once, kept in ``--home``) a home of real-shaped coding turns: requests of a few words to a
few paragraphs, tool calls whose outputs are real Python standard library sources, test logs and
stack traces, replies with code blocks, about 15 % Chinese turns. Every turn gets a vector of the
default model (random unit vectors: the size of the index is what costs at load time; the query
embedding is real). Then it times the real ``remem`` command in a new process, cold each time:
``search`` and ``recall`` (human and ``--json``), without a daemon and with one running.

``--before SRC`` also runs every command from another checkout's ``src`` (first on ``PYTHONPATH``),
taking turns with this one run by run: the "before" column (``--before ../main/src``). The daemon
is always this checkout's; a "before" CLI that never asks it simply runs directly.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

QUERIES = [
    "KeyError in the checkout test after the migration",
    "how do we parse the json config with a default encoding",
    "为什么 CI 上的构建这么慢",
    "subprocess timeout when the test runner hangs",
]

_CN = ["修复登录接口的超时问题，顺便看看缓存是否命中。", "这个测试在 CI 上偶尔失败，帮我找出原因并修好。",
       "把数据库迁移脚本改成幂等的，重复执行不能报错。", "解释一下这段代码为什么在多线程下会死锁。",
       "给配置加载加上默认编码，避免中文路径出错。", "构建太慢了：Docker 缓存没有命中，先复制依赖文件再安装。"]


def _stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.glob("*.py") if p.stat().st_size > 2000)
    return files or sorted(root.rglob("*.py"))[:200]


def real_turns(n: int, seed: int = 15) -> list[Any]:
    """``n`` real-shaped turns (text from the standard library's own sources and docstrings)."""
    from ..model import ToolCall, TurnIn

    rng = random.Random(seed)
    files = _stdlib_files()
    texts = {f: f.read_text(encoding="utf-8", errors="replace") for f in files[:120]}
    names = list(texts)
    now = time.time()
    out = []
    for i in range(n):
        f = names[rng.randrange(len(names))]
        src = texts[f]
        lines = src.splitlines()
        a = rng.randrange(max(1, len(lines) - 80))
        snippet = "\n".join(lines[a:a + rng.choice((10, 30, 80))])
        funcs = [ln.split("(")[0][4:] for ln in lines if ln.startswith("def ")] or ["main"]
        fn = rng.choice(funcs)
        project = f"/home/dev/{['shop', 'api', 'infra', 'web', 'tools'][i % 5]}"
        if rng.random() < 0.15:
            request = rng.choice(_CN) + f" 相关函数：{fn}（{f.name}）"
            reply = f"已修改 `{fn}`：原因是{rng.choice(_CN)}\n```python\n{snippet[:600]}\n```"
        else:
            words = rng.choice((8, 14, 30, 90))
            doc = " ".join(src.split()[a % 500: a % 500 + words])
            request = f"Fix `{fn}` in {f.name}: {doc}"
            reply = (f"The problem was in `{fn}` ({f.name}, line {a + 1}). I changed it and the tests pass.\n"
                     f"```python\n{snippet[:1200]}\n```")
        tb = (f"Traceback (most recent call last):\n  File \"{f}\", line {a + 1}, in {fn}\n"
              f"    {lines[a].strip() if lines else ''}\nKeyError: '{fn}'\n")
        log = "\n".join(f"tests/test_{f.stem}.py::test_{fn}_{j} {'PASSED' if j % 7 else 'FAILED'}"
                        for j in range(rng.choice((5, 20, 60))))
        acts = [ToolCall(name="read", input=str(f), output=snippet),
                ToolCall(name="bash", input=f"pytest tests/test_{f.stem}.py -x", output=log + "\n" + tb,
                         is_error=True)]
        if rng.random() < 0.3:
            acts.append(ToolCall(name="edit", input=f"{f.name}: {fn}", output="ok"))
        ts = now - (n - i) * 600
        out.append(TurnIn(request=request, reply=reply, actions=acts, owner="default",
                          agent=["claude-code", "codex", "cursor"][(i // 8) % 3], project=project,
                          session_id=f"s-{i // 8:05d}", started_at=ts, ended_at=ts + 60, status="succeeded",
                          model="model-x"))
    return out


def build_home(home: Path, turns: int) -> dict[str, Any]:
    """A home of ``turns`` real-shaped turns with vectors for every turn (made once)."""
    import numpy as np

    from ..core import Remem
    from ..embed.embedders import DEFAULT_EMBEDDER, get_embedder

    marker = home / "bench-cli-speed.json"
    if marker.exists():
        return dict(json.loads(marker.read_text()))
    env = {**os.environ, "REMEM_EMBEDDING_ENABLED": "false"}
    env.pop("REMEM_EMBEDDING_MODEL", None)
    t0 = time.perf_counter()
    mem = Remem(home, env=env)
    batch = real_turns(turns)
    for i in range(0, len(batch), 500):
        mem.add_turns(batch[i:i + 500])
    model_id = get_embedder(DEFAULT_EMBEDDER).model_id
    dim = int(model_id.rsplit(":", 1)[1])
    rng = np.random.default_rng(15)
    rows = mem.store.turns.embed_batch(len(batch) + 1)  # embeddings are off: every turn waits for vectors
    out = []
    for r in rows:
        for fld in ("summary", "actions"):
            v = rng.standard_normal(dim).astype(np.float32)
            v /= np.linalg.norm(v)
            out.append(("turn", r["id"], fld, model_id, dim, v.tobytes(), r["content_hash"], r["owner"], r["agent"],
                        r["project"]))
    with mem.store.transaction():
        mem.store.vectors.put_many(out)
        mem.store.turns.mark_embedded([(r["id"], r["content_hash"]) for r in rows])
    mem.close()
    info = {"turns": len(rows), "build_s": round(time.perf_counter() - t0, 1),
            "db_mb": round((home / "remem.db").stat().st_size / 1e6, 1) if (home / "remem.db").exists() else None}
    marker.write_text(json.dumps(info))
    return info


def run_cli(home: Path, args: list[str], src: str | None) -> tuple[float, str]:
    env = {**os.environ, "REMEM_HOME": str(home)}
    env.pop("REMEM_EMBEDDING_MODEL", None)
    env.pop("REMEM_EMBEDDING_ENABLED", None)
    if src:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "remem", *args], env=env, capture_output=True, text=True, timeout=120)
    took = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"remem {' '.join(args)} failed: {p.stderr[-800:]}")
    return took, p.stdout


CASES = {
    "search": lambda q: ["search", q],
    "search --json": lambda q: ["search", q, "--json"],
    "recall": lambda q: ["recall", q],
    "recall --json": lambda q: ["recall", q, "--json"],
}


def measure(home: Path, runs: int, srcs: dict[str, str | None]) -> dict[str, dict[str, dict[str, float]]]:
    """Median and max seconds per command for each code version; the versions take turns run by
    run, so a machine shared with other work loads them alike."""
    times: dict[str, dict[str, list[float]]] = {v: {c: [] for c in CASES} for v in srcs}
    for name, make in CASES.items():
        for i in range(runs):
            for version, src in srcs.items():
                took, _ = run_cli(home, make(QUERIES[i % len(QUERIES)]), src)
                times[version][name].append(took)
    return {v: {c: {"median_s": round(statistics.median(t), 3), "max_s": round(max(t), 3)} for c, t in cases.items()}
            for v, cases in times.items()}


def table(results: dict[str, Any]) -> str:
    """The Markdown table of RESULTS.md: one row per command, one column per version and daemon."""
    cols = [(d, v) for d in ("without daemon", "with daemon") if d in results for v in results[d]]
    head = "| command | " + " | ".join(f"{v}, {d}" for d, v in cols) + " |"
    rows = [head, "|" + "---|" * (len(cols) + 1)]
    for c in CASES:
        cells = [f"{results[d][v][c]['median_s']:.2f} s (max {results[d][v][c]['max_s']:.2f})" for d, v in cols]
        rows.append(f"| `remem {c} QUERY` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--home", default=None, help="Where the bench home lives (kept; default: a temp dir).")
    ap.add_argument("--before", default=None, metavar="SRC",
                    help="Also time the CLI run from this src directory (the 'before' column), in turns.")
    ap.add_argument("--no-daemon", action="store_true", help="Only the cold path without a daemon.")
    args = ap.parse_args(argv)
    import tempfile

    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="remem-cli-speed-"))
    info = build_home(home, args.turns)
    print(f"home: {info['turns']} turns, {info.get('db_mb')} MB (built in {info['build_s']} s)", flush=True)
    srcs: dict[str, str | None] = {"before": args.before} if args.before else {}
    srcs["after"] = None
    results: dict[str, Any] = {"home": info, "load_before": os.getloadavg()}
    results["without daemon"] = measure(home, args.runs, srcs)
    print(json.dumps(results["without daemon"]), flush=True)
    if not args.no_daemon:
        from ..server.testing import Daemon

        d = Daemon(home, env={"REMEM_EMBEDDING_ENABLED": "true"}, wait=120.0)
        d.env.pop("REMEM_EMBEDDING_MODEL", None)   # the home's default model, as a user runs it
        with d:
            run_cli(home, ["search", "warm up the daemon"], None)
            results["with daemon"] = measure(home, args.runs, srcs)
        print(json.dumps(results["with daemon"]), flush=True)
    results["load_after"] = os.getloadavg()
    print(json.dumps(results, indent=2))
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
