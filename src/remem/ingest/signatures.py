"""Error signatures: a normalized line that identifies the same failure across turns."""

from __future__ import annotations

import re

_PATTERNS = [
    re.compile(r"\b([A-Z][A-Za-z]*(?:Error|Exception|Warning)\b(?::[^\n]{0,160})?)"),
    re.compile(r"\b(error\[E\d{4}\][^\n]{0,120})"),          # rustc
    re.compile(r"\b(npm ERR! code [A-Z0-9_]+)"),
    re.compile(r"\b(E\d{3,5}\b[^\n]{0,80})"),                  # linters / compilers
    re.compile(r"(fatal: [^\n]{0,120})"),
    re.compile(r"\b((?:command not found|No such file or directory|Permission denied)[^\n]{0,60})"),
    re.compile(r"\b(exit (?:code|status) \d+)", re.I),
    re.compile(r"\b(TS\d{4}: [^\n]{0,120})"),
    # added for learning (layers/procedures.py): the errors most frequent on real agent histories
    re.compile(r"\b((?:IDE|CS|CA|NU|MSB|NETSDK|SA|BC|FS|CSC)\d{4}\b:?[^\n]{0,100})"),   # .NET / NuGet / MSBuild
    re.compile(r"(FAILED [\w./\\-]+::[\w\[\]./:-]+)"),                             # pytest
    re.compile(r"(\u25cf [^\n]{1,120})"),                                              # jest / vitest "●"
    re.compile(r"(undefined: [A-Za-z_][\w.]*)"),                                        # Go
    re.compile(r"(cannot find symbol[^\n]{0,80})"),                                     # javac
    re.compile(r"(Failed to resolve import [^\n]{0,100})"),                             # Vite
    re.compile(r"(Module not found: [^\n]{0,120})"),                                    # webpack / Next.js
    re.compile(r"(Cannot find module [^\n]{0,100})"),                                   # node / bun / tsc
    re.compile(r"(The token '&&' is not a valid statement separator)"),                  # PowerShell 5
    re.compile(r"(?m)^\s*(error: [^\n]{5,120})"),                                        # cargo, bun, git, clang
    re.compile(r"\b(Build FAILED\.?)"),                                                 # MSBuild
]
_NUM = re.compile(r"\b0x[0-9a-f]+\b|\b\d+\b", re.I)
_QUOTED = re.compile(r"(['\"`])[^'\"`\n]{1,80}\1")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:/[\w.@+-]+){2,}")


def normalize_signature(line: str) -> str:
    s = _PATH.sub("<path>", line.strip())
    s = _QUOTED.sub(lambda m: m.group(1) + "…" + m.group(1), s) if "No module named" not in s else s
    s = _NUM.sub("N", s)
    return re.sub(r"\s+", " ", s)[:160]


def error_signatures(text: str, limit: int = 5) -> list[str]:
    """Distinct normalized error signatures found in ``text`` (tool output, replies)."""
    found: list[str] = []
    for pat in _PATTERNS:
        for m in pat.finditer(text or ""):
            sig = normalize_signature(m.group(1))
            if sig and sig not in found:
                found.append(sig)
            if len(found) >= limit:
                return found
    return found
