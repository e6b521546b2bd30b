"""Shell commands: split a command line, name its family ("bun test", "npm run build"), judge its run.

Pure helpers shared by the procedure and world-model extractors.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..ingest.signatures import error_signatures
from .types import Action

_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\n)\s*")
_NOISE = frozenset(("cd", "eval", "export", "set", "source", ".", "echo", "sleep", "clear", "cls", "ls", "dir",
                    "cat", "type", "pwd", "mkdir", "rm", "del", "cp", "mv", "touch", "set-location",
                    "get-childitem", "write-host", "head", "tail", "grep", "find", "which", "where", "timeout",
                    "start-sleep", "true", "false", "exit", "sudo", "time", "git", "chmod", "open", "code"))
NOISE = _NOISE             # programs that set up, move around or print: no tool of the project
_RUNNERS = frozenset(("npm", "pnpm", "yarn", "bun", "uv", "poetry", "pipenv", "npx", "bunx", "pnpx", "deno"))
_SUBCMD_TOOLS = frozenset(("dotnet", "cargo", "go", "make", "docker", "gradle", "mvn", "mix", "swift", "flutter",
                           "kubectl", "terraform", "nx", "turbo", "pip", "pip3",
                           "conda", "brew", "gh", "next", "vite", "tsc", "jest", "vitest", "pytest", "ruff",
                           "eslint", "prettier", "mypy"))
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")
TEST_WORDS = frozenset(("test", "tests", "pytest", "jest", "vitest", "mocha", "xunit", "nunit", "spec"))
BUILD_WORDS = frozenset(("build", "compile", "tsc", "bundle", "publish", "pack"))
LINT_WORDS = frozenset(("lint", "eslint", "ruff", "flake8", "pylint", "format", "prettier", "biome", "mypy",
                        "typecheck", "check"))
RUN_WORDS = frozenset(("run", "start", "dev", "serve", "watch", "preview"))
INSTALL_WORDS = frozenset(("install", "add", "ci", "i", "sync", "restore", "remove", "uninstall"))
_VERBS = (TEST_WORDS | BUILD_WORDS | LINT_WORDS | RUN_WORDS) - {"run"}
_FAIL = re.compile(
    r"\b(?:[1-9]\d* (?:fail|failed|failing|failures?|errors?)\b|FAIL(?:ED)?\b|Failed!|Build FAILED|npm ERR!|"
    r"command not found|not recognized as|No such file or directory|exit (?:code|status) [1-9]|"
    r"Traceback \(most recent call last\)|error(?:\[E\d+\])?:|error [A-Z]{2,}\d{3,}|Error:|"
    r"ERR_[A-Z_]+|Cannot find module|Module not found|is not a valid statement separator)")
_PASS = re.compile(r"\b(?:Build succeeded|0 (?:fail|failed|errors?)\b|Passed!|all tests passed|\d+ passed\b|"
                   r"\d+ pass\b|Tests?:\s+\d+ passed|✓|OK\b|Compiled successfully|Ready in|Local:\s+http)", re.I)


def segments(command: str) -> list[str]:
    """The meaningful parts of a command line (no cd / env setup / echo)."""
    out = []
    for seg in _SPLIT.split(command.strip()):
        seg = seg.split(" | ")[0].strip().strip("()")
        words = seg.split()
        while words and _ENV.match(words[0]):
            words = words[1:]
        if not words or words[0].lower().lstrip("&") in _NOISE:
            continue
        out.append(" ".join(words))
    return out


def family(segment: str) -> str:
    """A command's family: the runner and its verb, without paths, flags or arguments."""
    w = [x for x in segment.replace('"', " ").replace("'", " ").split() if x]
    if not w:
        return ""
    w[0] = w[0].lower().rsplit("/", 1)[-1].rsplit("\\", 1)[-1].removesuffix(".exe")
    if w[0] in ("python", "python3", "py") and len(w) >= 3 and w[1] == "-m":
        return f"{w[0]} -m {w[2]}"
    if w[0] in _RUNNERS and len(w) >= 2:
        if w[1] in ("run", "exec", "x") and len(w) >= 3:
            nxt = w[2]
            if w[0] == "uv" or w[0] == "poetry" or w[0] == "pipenv" or w[1] == "exec":
                return f"{w[0]} {w[1]} " + (family(" ".join(w[2:])) or nxt)
            return f"{w[0]} run {nxt}"
        if w[1].startswith("-"):
            return w[0]
        return f"{w[0]} {w[1]}"
    if w[0] in _SUBCMD_TOOLS and len(w) >= 2 and not w[1].startswith("-") and "/" not in w[1] \
            and "\\" not in w[1] and "." not in w[1]:
        return f"{w[0]} {w[1]}"
    if len(w) >= 2 and w[1].lower() in _VERBS:
        return f"{w[0]} {w[1].lower()}"     # any other program's test / build / run verb: "mycli dev"
    return w[0]


def category(fam: str) -> str:
    """test / build / lint / run / install / '' for a family."""
    words = set(re.split(r"[\s:]+", fam.lower()))
    if words & INSTALL_WORDS and words & {"npm", "pnpm", "yarn", "bun", "uv", "pip", "pip3", "poetry", "dotnet",
                                          "cargo", "go", "conda", "brew"}:
        return "install"
    if words & TEST_WORDS:
        return "test"
    if words & LINT_WORDS:
        return "lint"
    if words & BUILD_WORDS:
        return "build"
    if words & RUN_WORDS or fam.split(" ")[0] in ("node", "python", "python3", "deno", "ts-node", "tsx"):
        return "run"
    return ""


def outcome(action: Action) -> str:
    """"ok", "failed" or "" (unknown) for a shell action."""
    if action.status in ("ok", "failed"):
        return action.status
    return _judge(action.output or "")


@lru_cache(maxsize=8192)
def _judge(out: str) -> str:
    if not out.strip():
        return ""
    tail = out[-3000:]
    if _FAIL.search(tail):
        if _PASS.search(tail) and not re.search(r"\b[1-9]\d* (?:fail|failed|errors?)\b|FAILED|Failed!", tail):
            return "ok"
        return "failed"
    return "ok"


def signatures(action: Action) -> list[str]:
    return list(_sigs(action.output[-6000:] if action.output else ""))


@lru_cache(maxsize=8192)
def _sigs(tail: str) -> tuple[str, ...]:
    return tuple(error_signatures(tail, limit=3))
