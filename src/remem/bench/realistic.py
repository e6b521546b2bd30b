"""Real-shaped coding-agent histories: Claude Code JSONL and Codex rollouts of realistic size.

    python -m remem.bench.realistic --turns 2000 --out DIR    # writes DIR/.claude, DIR/.codex

A turn (request, tool calls, reply) follows the lengths measured on public Claude Code / Cursor / aider
histories (issue 15): total median ~4 KB, mean ~7 KB, p90 ~23 KB; requests median ~77, mean ~311
characters. Its text comes from material that ships with the machine: the Python standard library's
own sources and docstrings (file reads, diffs, grep hits, stack traces through real code lines) and the
shapes of pytest / git / shell output. About 15 % of turns are Chinese, from a short list of
developer sentences below. Deterministic for one seed on one Python.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import difflib
import json
import random
import re
import sysconfig
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

# quantiles of the turn size in bytes (u → size, log-interpolated between knots): median 4 KB,
# p90 23 KB, mean ~7 KB; the tail is capped (real outputs reach megabytes, but they are shortened
# at import, so a few 40 KB turns stand for them)
TURN_KNOTS = ((0.0, 600), (0.1, 1100), (0.25, 2000), (0.5, 4700), (0.75, 8600), (0.9, 26000),
              (0.97, 30000), (1.0, 40000))
REQUEST_MU, REQUEST_SIGMA = 4.344, 1.67   # lognormal: median e^mu = 77, mean 77·e^(σ²/2) ≈ 311
CHINESE_SHARE = 0.15
PY = "python3.12"

# developer sentences (Chinese); {f} function, {p} path, {e} error type, {m} module
ZH_REQUESTS = (
    "帮我看一下 {p} 里的 {f} 为什么会抛出 {e}",
    "测试挂了，{e} 出现在 {f}，帮我修一下",
    "把 {m} 的这段逻辑重构一下，{f} 太长了",
    "{f} 的返回值不对，期望是列表，实际拿到的是 None",
    "能不能给 {p} 加上类型注解，顺便跑一下 mypy",
    "这个 {e} 只在 CI 上出现，本地复现不了，帮我查查原因",
    "给 {f} 写几个单元测试，覆盖空输入和超长输入",
    "为什么 {m} 导入这么慢？看看是不是循环导入",
    "把日志级别改成 warning，{p} 里打印太多了",
    "合并之后 {f} 的行为变了，对比一下 diff",
    "继续",
    "好的，提交吧",
    "这个方案可以，但是 {f} 里不要用全局变量",
    "跑一下全部测试，看看还有哪些失败",
    "{p} 第 {n} 行报 {e}，是编码问题吗",
)
ZH_REPLY = (
    "我先读了 {p}，问题出在 {f}：当输入为空时它直接返回了 None，调用方没有做判断。",
    "已经修改了 {f}，在入口处检查参数类型，不合法时抛出 {e} 并给出清楚的错误信息。",
    "重新运行测试后全部通过，之前失败的用例是因为缓存没有清空。",
    "这个 {e} 的根本原因是 {m} 在导入时读取了环境变量，测试里没有设置。",
    "我把重复的代码提取成了一个辅助函数，{p} 现在短了大约四十行。",
    "注意：{f} 在多线程下不是安全的，我加了一把锁，性能影响可以忽略。",
    "下一步建议给 {m} 补充文档，并在 CHANGELOG 里记录这次行为变化。",
    "diff 很小，只动了 {p} 的两处，其余文件没有变化。",
)
EN_REQUESTS = (
    "fix the failing test in {p}", "why does {f} raise {e} here?", "run the tests",
    "refactor {f} in {p} so it no longer reads the config twice", "add a --dry-run flag to {f}",
    "what does {m} do with an empty input? check {p}", "continue", "yes, commit it",
    "the CI run fails with {e} in {f}, but it passes locally. can you look?",
    "rename {f} to something clearer and update the callers",
    "{e} when I call {f} with a relative path — see below", "write a regression test for {f}",
    "profile {m}: the import takes 2 s on a cold start", "looks good, now update the docs in README.md",
)
EN_REPLY = (
    "I read {p}: {f} assumes its argument is already decoded, so a bytes value falls through to the "
    "generic branch and raises {e}.",
    "Changed {f} to normalise the input first and added a test covering the empty and the bytes case.",
    "All tests pass now ({n} passed). The earlier failure came from a stale cache directory.",
    "The root cause is in {m}: it reads the environment at import time, which the test never sets.",
    "I kept the public signature of {f} unchanged; only the private helper moved.",
    "Note that {f} is not thread-safe; I added a lock around the shared state.",
)


@dataclass
class _Module:
    rel: str
    lines: list[str]
    funcs: list[tuple[str, int, int]]  # name, first line, last line (1-based)
    docs: list[str]


@dataclass
class Generated:
    turns: int = 0
    chinese: int = 0
    turn_bytes: list[int] = field(default_factory=list)
    request_chars: list[int] = field(default_factory=list)
    files: int = 0


@lru_cache(maxsize=1)
def _stdlib() -> tuple[_Module, ...]:
    """A deterministic pool of standard-library modules with their functions and docstrings."""
    root = Path(sysconfig.get_paths()["stdlib"])
    paths = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts
                   and "test" not in p.parts[len(root.parts):len(root.parts) + 1]
                   and 4_000 < p.stat().st_size < 150_000)
    pick = random.Random(7).sample(paths, min(160, len(paths)))
    out = []
    for p in sorted(pick):
        src = p.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(src)
        except (SyntaxError, ValueError):
            continue
        funcs = [(n.name, n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree)
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and (n.end_lineno or 0) > n.lineno]
        docs = [d for n in ast.walk(tree) if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef)
                and (d := ast.get_docstring(n)) and len(d) > 60]
        if funcs:
            out.append(_Module(str(p.relative_to(root)), src.splitlines(), funcs, docs))
    return tuple(out)


ERRORS = tuple(sorted(n for n in dir(builtins) if n.endswith("Error") and n != "EnvironmentError"))


class _Text:
    """Real-shaped pieces built from the stdlib pool."""

    def __init__(self, rng: random.Random, project: str) -> None:
        self.rng, self.project, self.mods = rng, project, _stdlib()

    def mod(self) -> _Module:
        return self.rng.choice(self.mods)

    def path(self, m: _Module) -> str:
        return "src/" + m.rel if self.rng.random() < 0.6 else m.rel

    def fill(self, tpl: str, m: _Module | None = None) -> str:
        m = m or self.mod()
        f = self.rng.choice(m.funcs)[0]
        return tpl.format(f=f + "()", p=self.path(m), e=self.rng.choice(ERRORS), n=self.rng.randint(3, 400),
                          m=m.rel.removesuffix(".py").replace("/", "."))

    def code(self, m: _Module, n: int) -> str:
        name, a, b = self.rng.choice(m.funcs)
        return "\n".join(m.lines[a - 1 : min(b, a - 1 + n)])

    def file_read(self, m: _Module, size: int) -> str:
        start = self.rng.randint(0, max(0, len(m.lines) - 40))
        out, n = [], 0
        for i, line in enumerate(m.lines[start:], start + 1):
            row = f"{i:>6}\t{line}"
            out.append(row)
            n += len(row) + 1
            if n >= size:
                break
        return "\n".join(out)

    def traceback(self, err: str) -> str:
        frames = ["Traceback (most recent call last):"]
        for _ in range(self.rng.randint(2, 7)):
            m = self.mod()
            name, a, b = self.rng.choice(m.funcs)
            ln = self.rng.randint(a, b)
            where = (f"{self.project}/.venv/lib/{PY}/{m.rel}" if self.rng.random() < 0.5
                     else f"{self.project}/src/{m.rel}")
            frames += [f'  File "{where}", line {ln}, in {name}', "    " + m.lines[ln - 1].strip()]
        doc = self.rng.choice(self.mod().docs or ["invalid value"]).split("\n")[0][:120]
        return "\n".join(frames) + f"\n{err}: {doc}"

    def pytest_log(self, size: int) -> str:
        m = self.mod()
        tests = [f"tests/test_{mm.rel.replace('/', '_')}" for mm in self.rng.sample(self.mods, 6)]
        out = ["=" * 29 + " test session starts " + "=" * 30,
               "platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0",
               f"rootdir: {self.project}", "configfile: pyproject.toml", "plugins: anyio-4.6.2, xdist-3.6.1",
               f"collected {self.rng.randint(40, 900)} items", ""]
        pct = 0
        for t in tests:
            pct = min(100, pct + self.rng.randint(5, 20))
            out.append(f"{t} " + "".join(self.rng.choice("....F.s") for _ in range(self.rng.randint(8, 60)))
                       + f" [{pct:>3}%]")
        failed = []
        out.append("=" * 35 + " FAILURES " + "=" * 35)
        while sum(map(len, out)) < size:
            name, a, b = self.rng.choice(m.funcs)
            err = self.rng.choice(("AssertionError", *self.rng.sample(ERRORS, 2)))
            t = self.rng.choice(tests)
            out += [f"{'_' * 20} test_{name} {'_' * 20}", ""]
            body = m.lines[a - 1 : min(b, a + 14)]
            out += ["    " + x for x in body[:-1]] + [">   " + (body[-1] if body else "pass"),
                                                    f"E   {err}: {self.fill('{f} returned {n}, expected 0', m)}",
                                                    "", f"{t}:{self.rng.randint(10, 900)}: {err}"]
            out += ["-" * 30 + " Captured log call " + "-" * 30,
                    f"WARNING  {m.rel.removesuffix('.py').replace('/', '.')}:{m.rel}:{a} "
                    + self.rng.choice(m.docs or ["retrying"]).split("\n")[0][:100]]
            failed.append(f"FAILED {t}::test_{name} - {err}")
            m = self.mod()
        out += ["=" * 27 + " short test summary info " + "=" * 28, *failed,
                f"{'=' * 20} {len(failed)} failed, {self.rng.randint(40, 800)} passed in "
                f"{self.rng.uniform(1, 90):.2f}s {'=' * 20}"]
        return "\n".join(out)

    def diff(self, m: _Module, size: int) -> str:
        chunks: list[str] = []
        while sum(map(len, chunks)) < size:
            name, a, b = self.rng.choice(m.funcs)
            old = m.lines[a - 1 : b]
            new = list(old)
            for _ in range(max(1, len(new) // 8)):
                i = self.rng.randrange(len(new))
                new[i] = new[i].replace("self", "self_", 1) if "self" in new[i] else new[i] + "  # checked"
            chunks.append("\n".join(difflib.unified_diff(old, new, f"a/{m.rel}", f"b/{m.rel}", lineterm="", n=3)))
            m = self.mod()
        return f"diff --git a/{m.rel} b/{m.rel}\n" + "\n".join(chunks)

    def grep(self, word: str, size: int) -> str:
        out: list[str] = []
        while sum(map(len, out)) < size:
            m = self.mod()
            for i, line in enumerate(m.lines, 1):
                if word in line:
                    out.append(f"{m.rel}:{i}:{line.strip()}")
            word = self.rng.choice(("return", "def ", "raise", "self.", "import", "None", "if not"))
        return "\n".join(out)

    def prose(self, zh: bool, size: int, m: _Module) -> str:
        pool = ZH_REPLY if zh else EN_REPLY
        out: list[str] = []
        while sum(map(len, out)) < size:
            r = self.rng.random()
            if r < 0.2:
                out.append("```python\n" + self.code(self.mod(), self.rng.randint(4, 25)) + "\n```")
            elif r < 0.3 and m.docs and not zh:
                out.append(self.rng.choice(m.docs))
            else:
                out.append(self.fill(self.rng.choice(pool), m))
        return "\n\n".join(out)

    def request(self, zh: bool, size: int) -> str:
        m = self.mod()
        text = self.fill(self.rng.choice(ZH_REQUESTS if zh else EN_REQUESTS), m)
        while size > len(text) + 40:
            paste = self.traceback(self.rng.choice(ERRORS)) if self.rng.random() < 0.5 else \
                "```\n" + self.code(self.mod(), 80) + "\n```"
            text += "\n\n" + paste[: size - len(text)]
        return text


def _cut(text: str, size: int) -> str:
    return text if len(text) <= size else text[:size].rsplit("\n", 1)[0]


def _turn_size(rng: random.Random) -> int:
    u = rng.random()
    for (u0, s0), (u1, s1) in zip(TURN_KNOTS, TURN_KNOTS[1:], strict=False):
        if u <= u1:
            f = (u - u0) / (u1 - u0)
            return int(s0 * (s1 / s0) ** f)
    return TURN_KNOTS[-1][1]


def _tool_calls(tx: _Text, budget: int) -> list[tuple[str, dict[str, str], str, bool]]:
    """(tool, input, output, is_error) filling about ``budget`` bytes."""
    rng = tx.rng
    k = max(1, min(8, budget // rng.randint(1500, 4000)))
    out = []
    for _ in range(k):
        part = max(60, budget // k)
        m = tx.mod()
        kind = rng.random()
        if kind < 0.35:
            out.append(("Read", {"file_path": f"{tx.project}/{tx.path(m)}"}, tx.file_read(m, part), False))
        elif kind < 0.55:
            err = rng.random() < 0.5
            out.append(("Bash", {"command": "python -m pytest -x -q " + rng.choice(("tests", "tests/unit", "-k " + m.funcs[0][0]))},
                        tx.pytest_log(part) if err else tx.pytest_log(min(part, 900)), err))
        elif kind < 0.7:
            exc = rng.choice(ERRORS)
            out.append(("Bash", {"command": f"python -c 'import {m.rel.removesuffix('.py').replace('/', '.')}'"},
                        _cut(tx.traceback(exc), part), True))
        elif kind < 0.85:
            out.append(("Bash", {"command": "git diff"}, _cut(tx.diff(m, part), part), False))
        else:
            word = rng.choice(m.funcs)[0]
            out.append(("Grep", {"pattern": word, "path": "src"}, _cut(tx.grep(word, part), part) or "No matches found",
                        False))
    return out


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _turn(tx: _Text, stats: Generated) -> tuple[str, list[tuple[str, dict[str, str], str, bool]], str]:
    rng = tx.rng
    zh = rng.random() < CHINESE_SHARE
    size = _turn_size(rng)
    req = tx.request(zh, min(int(rng.lognormvariate(REQUEST_MU, REQUEST_SIGMA)) + 2, 8000))
    reply_size = max(80, min(int(size * rng.uniform(0.05, 0.25)), 4000))
    calls = _tool_calls(tx, max(0, size - len(req) - reply_size)) if size > len(req) + reply_size + 200 else []
    reply = _cut(tx.prose(zh, reply_size, tx.mod()), max(reply_size, 80))
    total = len(req.encode()) + len(reply.encode()) + sum(len(json.dumps(i)) + len(o.encode()) for _, i, o, _ in calls)
    stats.turns += 1
    stats.chinese += zh
    stats.turn_bytes.append(total)
    stats.request_chars.append(len(req))
    return req, calls, reply


def _claude_session(tx: _Text, path: Path, n: int, t: float, stats: Generated) -> float:
    sid = path.stem
    lines, parent = [], None

    def rec(kind: str, message: dict, *, extra: dict | None = None) -> None:
        nonlocal t, parent
        t += tx.rng.uniform(1, 30)
        uid = str(uuid.UUID(int=tx.rng.getrandbits(128)))
        lines.append({"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": tx.project,
                      "sessionId": sid, "version": "2.1.0", "gitBranch": "main", "type": kind, "message": message,
                      "uuid": uid, "timestamp": _iso(t), **(extra or {})})
        parent = uid

    for _k in range(n):
        req, calls, reply = _turn(tx, stats)
        rec("user", {"role": "user", "content": req})
        for j, (name, inp, out, err) in enumerate(calls):
            cid = f"toolu_{tx.rng.getrandbits(64):016x}"
            rec("assistant", {"id": f"msg_{tx.rng.getrandbits(64):016x}", "type": "message", "role": "assistant",
                              "model": "claude-sonnet-4-5", "content": [{"type": "tool_use", "id": cid, "name": name,
                                                                         "input": inp}],
                              "stop_reason": "tool_use", "usage": {"input_tokens": 4, "output_tokens": 90 + j}})
            rec("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": out,
                                                      "is_error": err}]},
                extra={"toolUseResult": {"stdout": out[:200], "stderr": "", "interrupted": False}})
        rec("assistant", {"id": f"msg_{tx.rng.getrandbits(64):016x}", "type": "message", "role": "assistant",
                          "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": reply}],
                          "stop_reason": "end_turn"})
        t += tx.rng.uniform(30, 900)
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    return t


def _codex_session(tx: _Text, sessions: Path, n: int, t: float, stats: Generated) -> float:
    rng = tx.rng
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    day = datetime.fromtimestamp(t, tz=UTC)
    d = sessions / day.strftime("%Y/%m/%d")
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"rollout-{day.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl"
    lines: list[dict] = []

    def rec(kind: str, payload: dict) -> None:
        nonlocal t
        t += rng.uniform(0.05, 20)
        lines.append({"timestamp": _iso(t), "type": kind, "payload": payload})

    rec("session_meta", {"id": sid, "timestamp": _iso(t), "cwd": tx.project, "originator": "codex_cli_rs",
                         "cli_version": "0.128.0", "source": "cli", "model_provider": "openai",
                         "base_instructions": {"text": "You are Codex..."}})
    for _k in range(n):
        req, calls, reply = _turn(tx, stats)
        tid = str(uuid.UUID(int=rng.getrandbits(128)))
        rec("event_msg", {"type": "task_started", "turn_id": tid, "model_context_window": 258400})
        rec("turn_context", {"turn_id": tid, "cwd": tx.project, "approval_policy": "on-request",
                             "sandbox_policy": {"type": "workspace-write"}, "model": "gpt-5.3-codex"})
        rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": req}]})
        rec("event_msg", {"type": "user_message", "message": req, "kind": "plain"})
        for _name, inp, out, err in calls:
            cid = f"call_{rng.getrandbits(48):012x}"
            cmd = inp.get("command") or (f"sed -n 1,200p {inp['file_path']}" if "file_path" in inp
                                         else f"rg -n {inp.get('pattern', '')} src")
            rec("response_item", {"type": "function_call", "name": "shell_command", "call_id": cid,
                                  "arguments": json.dumps({"command": cmd, "workdir": tx.project})})
            rec("response_item", {"type": "function_call_output", "call_id": cid,
                                  "output": f"Exit code: {1 if err else 0}\nWall time: {rng.uniform(0.1, 9):.1f} "
                                            f"seconds\nOutput:\n{out}"})
        rec("event_msg", {"type": "agent_message", "message": reply})
        rec("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                                 "text": reply}],
                              "phase": "final_answer"})
        rec("event_msg", {"type": "task_complete", "turn_id": tid, "last_agent_message": reply})
        t += rng.uniform(30, 900)
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    return t


def write_real_history(home: Path, *, turns: int, seed: int = 1, codex_share: float = 0.3,
                       start: float = 1.75e9) -> Generated:
    """Write about ``turns`` real-shaped turns under ``home`` (``.claude/projects``, ``.codex/sessions``)."""
    rng = random.Random(seed)
    stats = Generated()
    t = start
    while stats.turns < turns:
        project = f"/home/dev/{rng.choice(('webshop', 'etl-jobs', 'remem', 'billing-api', 'mlkit', 'infra'))}"
        tx = _Text(rng, project)
        n = min(turns - stats.turns, max(1, int(rng.lognormvariate(2.3, 0.8))))
        if rng.random() < codex_share:
            t = _codex_session(tx, home / ".codex/sessions", n, t, stats)
        else:
            d = home / ".claude/projects" / re.sub(r"[^A-Za-z0-9]", "-", project)
            d.mkdir(parents=True, exist_ok=True)
            t = _claude_session(tx, d / f"{uuid.UUID(int=rng.getrandbits(128), version=4)}.jsonl", n, t, stats)
        stats.files += 1
    return stats


def describe(stats: Generated) -> dict[str, float]:
    """Median / mean / p90 of the turn sizes and request lengths, and the Chinese share."""
    def q(xs: list[int], p: float) -> float:
        s = sorted(xs)
        return float(s[min(len(s) - 1, int(p * len(s)))]) if s else 0.0
    tb, rc = stats.turn_bytes, stats.request_chars
    return {"turns": stats.turns, "files": stats.files, "turn_median": q(tb, 0.5),
            "turn_mean": sum(tb) / max(1, len(tb)), "turn_p90": q(tb, 0.9), "request_median": q(rc, 0.5),
            "request_mean": sum(rc) / max(1, len(rc)), "chinese_share": stats.chinese / max(1, stats.turns)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True, help="a HOME to write .claude/ and .codex/ into")
    args = ap.parse_args()
    d = describe(write_real_history(args.out, turns=args.turns, seed=args.seed))
    print(json.dumps({k: round(v, 3) for k, v in d.items()}, indent=1))


if __name__ == "__main__":
    main()
