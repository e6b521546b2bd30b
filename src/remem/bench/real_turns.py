"""Real-shaped coding turns for the embedding benchmark and its tests, from text on the machine.

A turn as a coding agent writes it: a request of ~80-300 characters, a reply of 1-3 KB with a code
block, 2-6 tool calls (a file read, a pytest run with its log, a traceback, a diff, a grep) whose
outputs are 2-20 KB, and about 15 % of the turns in Chinese. The text comes from the Python
standard library's own sources (code, docstrings, file names, real exception names) and jieba's
dictionary (Chinese words), never lorem ipsum. Deterministic for a seed.

A stand-in until the general real-shaped history generator (issue 15) writes agent history files;
this one makes :class:`remem.model.TurnIn` values directly, which is all the embedding path needs.
"""

from __future__ import annotations

import difflib
import random
import re
import sysconfig
from functools import lru_cache
from pathlib import Path

from remem.model import ToolCall, TurnIn

_EXC = ["KeyError", "ValueError", "TypeError", "AttributeError", "AssertionError", "IndexError",
        "FileNotFoundError", "RuntimeError", "UnicodeDecodeError", "TimeoutError"]
_ZH_ASK = ["请帮我修复 {path} 里的 {exc}，{words}", "为什么 {func} 会报 {exc}？{words}",
           "把 {path} 的 {func} 重构一下，{words}", "测试 {test} 失败了：{words}，看看是什么原因"]
_EN_ASK = ["fix the {exc} in {path} when {func} gets {words}",
           "why does {test} fail with {exc}? it started after we changed {func} to handle {words}",
           "refactor {func} in {path} so that {words}; keep the public API and add a test",
           "the CI run is red: {test} raises {exc} in {func}. {words}. Can you look at it and fix it?"]


@lru_cache(maxsize=1)
def _sources() -> list[tuple[str, str]]:
    """(relative path, text) of standard-library modules of 3-60 KB."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for p in sorted(lib.glob("*.py")) + sorted(lib.glob("*/*.py")):
        try:
            size = p.stat().st_size
        except OSError:
            continue
        if 3000 <= size <= 60000 and "test" not in p.parts:
            try:
                out.append((str(p.relative_to(lib)), p.read_text("utf-8")))
            except (OSError, UnicodeDecodeError):
                continue
        if len(out) >= 300:
            break
    if not out:
        raise RuntimeError("no standard-library sources found to build turns from")
    return out


@lru_cache(maxsize=1)
def _zh_words() -> list[str]:
    """Common multi-character words of jieba's dictionary (empty when jieba is missing)."""
    try:
        import jieba
    except ImportError:
        return []
    path = Path(jieba.__file__).parent / "dict.txt"
    words = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            w, freq, *_ = line.split()
            if len(w) >= 2 and int(freq) >= 2000:
                words.append(w)
    return words


def _sentences(text: str) -> list[str]:
    docs = re.findall(r'"""(.*?)"""', text, re.S)
    sents = [s.strip().replace("\n", " ") for d in docs for s in re.split(r"(?<=\.)\s+", d)]
    return [re.sub(r"\s+", " ", s) for s in sents if 20 <= len(s) <= 200] or ["the result is not what we expected"]


def _funcs(text: str) -> list[str]:
    return re.findall(r"^\s*def (\w+)\(", text, re.M) or ["main"]


def _slice(rng: random.Random, text: str, size: int) -> str:
    if len(text) <= size:
        return text
    a = rng.randrange(0, len(text) - size)
    a = text.rfind("\n", 0, a) + 1
    return text[a:a + size]


def _pytest_log(rng: random.Random, path: str, funcs: list[str], exc: str, size: int) -> str:
    test = f"tests/test_{Path(path).stem}.py"
    lines = ["============================= test session starts ==============================",
             "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0", f"rootdir: /home/dev/{Path(path).stem}",
             f"collected {rng.randint(20, 400)} items", ""]
    while sum(len(x) + 1 for x in lines) < size * 0.6:
        f = rng.choice(funcs)
        lines.append(f"{test}::test_{f} {'PASSED' if rng.random() < 0.9 else 'FAILED'}"
                     f"{' ' * rng.randint(1, 20)}[{rng.randint(1, 99):3d}%]")
    lines += ["", "=================================== FAILURES ===================================",
              f"____________________________ test_{funcs[0]} ____________________________", ""]
    return "\n".join(lines) + "\n" + _traceback(rng, path, funcs, exc, int(size * 0.4)) + \
        f"\n=========================== short test summary info ============================\n" \
        f"FAILED {test}::test_{funcs[0]} - {exc}: {rng.choice(funcs)!r}\n" \
        f"==================== 1 failed, {rng.randint(20, 300)} passed in {rng.uniform(1, 40):.2f}s ===================="


def _traceback(rng: random.Random, path: str, funcs: list[str], exc: str, size: int) -> str:
    text = dict(_sources())[path]
    src_lines = text.splitlines()
    out = ["Traceback (most recent call last):"]
    while sum(len(x) + 1 for x in out) < size:
        n = rng.randrange(len(src_lines))
        out.append(f'  File "/usr/lib/python3.11/{path}", line {n + 1}, in {rng.choice(funcs)}')
        out.append("    " + src_lines[n].strip())
    out.append(f"{exc}: {rng.choice(_sentences(text))[:80]}")
    return "\n".join(out)


def _diff(rng: random.Random, path: str, text: str) -> str:
    part = _slice(rng, text, rng.randint(1500, 6000)).splitlines(keepends=True)
    new = [ln.replace("    ", "        ", 1) if rng.random() < 0.1 else ln for ln in part]
    new.insert(rng.randrange(len(new) + 1), "    # handle the empty case before the lookup\n")
    return "".join(difflib.unified_diff(part, new, f"a/{path}", f"b/{path}"))


def _zh(rng: random.Random, n: int) -> str:
    words = _zh_words()
    if not words:
        return "数据库迁移的问题还没有解决"
    return "".join(rng.choice(words) for _ in range(n)) + "。"


def real_turn(rng: random.Random, i: int = 0) -> TurnIn:
    """One real-shaped coding turn (see the module docstring)."""
    srcs = _sources()
    path, text = rng.choice(srcs)
    funcs, sents = _funcs(text), _sentences(text)
    exc, func = rng.choice(_EXC), rng.choice(funcs)
    test = f"tests/test_{Path(path).stem}.py::test_{func}"
    chinese = rng.random() < 0.15
    if chinese:
        request = rng.choice(_ZH_ASK).format(path=path, exc=exc, func=func, test=test,
                                             words=_zh(rng, rng.randint(8, 40)))
        prose = _zh(rng, rng.randint(30, 120))
    else:
        request = rng.choice(_EN_ASK).format(path=path, exc=exc, func=func, test=test,
                                             words=rng.choice(sents).rstrip(".").lower())
        prose = " ".join(rng.choice(sents) for _ in range(rng.randint(2, 6)))
    code = _slice(rng, text, rng.randint(500, 1800))
    reply = (f"{prose}\n\nThe change in `{path}`:\n\n```python\n{code}\n```\n\n"
             f"{rng.choice(sents)} Ran `pytest {test}`: it passes now.")
    kinds = ["read", "pytest", "diff", "grep", "traceback", "pytest"]
    actions = []
    for k in rng.sample(kinds, rng.randint(2, 6)):
        size = rng.randint(2000, 20000)
        if k == "read":
            actions.append(ToolCall("Read", f'{{"file_path": "/home/dev/proj/{path}"}}', _slice(rng, text, size)))
        elif k == "pytest":
            actions.append(ToolCall("Bash", f'{{"command": "python -m pytest {test} -x -q"}}',
                                    _pytest_log(rng, path, funcs, exc, size), is_error=rng.random() < 0.5))
        elif k == "diff":
            actions.append(ToolCall("Edit", f'{{"file_path": "/home/dev/proj/{path}"}}', _diff(rng, path, text)))
        elif k == "grep":
            hits = [f"{path}:{n + 1}:{ln}" for n, ln in enumerate(text.splitlines()) if func in ln]
            actions.append(ToolCall("Grep", f'{{"pattern": "{func}", "path": "."}}', "\n".join(hits)[:size]))
        else:
            actions.append(ToolCall("Bash", f'{{"command": "python -c \'import {Path(path).stem}\'"}}',
                                    _traceback(rng, path, funcs, exc, size), is_error=True))
    return TurnIn(request=request, reply=reply, actions=actions, owner="bench", agent="claude-code",
                  project="proj", session_id=f"s{i // 20}", source_key=f"real:{i}",
                  started_at=1.7e9 + i * 60.0)


def real_turns(n: int, seed: int = 15) -> list[TurnIn]:
    rng = random.Random(seed)
    return [real_turn(rng, i) for i in range(n)]
