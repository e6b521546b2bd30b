"""What of a user message is the user's own voice.

Pasted logs, stack traces, compiler and test output, code blocks, quoted text, tables, slash
commands, agent-inserted templates and pasted assistant answers are not: on real histories they are
the largest source of false rules ("Do NOT edit the plan file itself" is Cursor's template, "error:
Cannot find module" is a paste). Pure functions; EN and ZH.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..ingest.signatures import error_signatures
from ..text.cjk import LETTERS as _CJK_LETTERS

_FENCE = re.compile(r"^\s*(```|~~~)")
_CJK = re.compile(f"[{_CJK_LETTERS}]")
_LETTER = re.compile(f"[A-Za-z{_CJK_LETTERS}]")
_URL = re.compile(r"@?https?://\S+")
_EMOJI = "\U0001F300-\U0001FAFF\u2600-\u27BF\u2B50\u2B55\u23E9-\u23FA"   # pictographs, symbols, arrows
_MENTION = re.compile(r"(?<![\w`])@[\w./\\:-]+(?::\d+(?:-\d+)?)?")
# lines that are machine output, not a person writing
_MACHINE = [
    re.compile(r"^\s*\[?\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\]?"),                      # [13:37:51.815] log stamps
    re.compile(r"^\s*\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}"),                          # ISO log stamps
    re.compile(r"^\s*at [\w$.<>\[\]]+ ?\(?.*[:(]\d+"),                            # JS / Java / .NET frames
    re.compile(r"^\s*File \"(?:[^\"]+\", line \d+|[^\"\s]*$)"),                       # Python frames (or cut in one)
    re.compile(r"^\s*Traceback \(most recent call last\)"),
    re.compile(r"^\s*\[?(?:INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL)\b[:\]]"),
    re.compile(r"^\s*(?:npm (?:ERR!|WARN)|error TS\d+|warning [A-Z]+\d+)"),
    re.compile(r"^\s*(?:\$|>|PS [A-Z]:\\[^>]*>|[\w.-]+@[\w.-]+:[^$]*\$|[A-Z]:\\[^>]*>)(?:\s|$)"),  # prompts
    re.compile(r"^\s*[A-Za-z]:\\\S+"),                                            # C:\path lines
    re.compile(r"^\s*(?:/[\w.@+-]+){2,}\S*(?::\d+)"),                              # /path:line
    re.compile(r"\(\d+,\d+\): (?:error|warning) "),                               # MSBuild diagnostics
    re.compile(r"^\s*\|.*\|\s*$"),                                                # markdown tables
    re.compile(r"\t\S+\t"),                                                       # tab-separated (IDE lists)
    re.compile(r"^\s*[-+]{3,}|^\s*[=~*#-]{5,}\s*$"),                              # rules, diff headers
    re.compile(r"^\s*[{}\[\]();,]+\s*$"),                                         # brace-only lines
    re.compile(r"^\s*(?://|/\*|\*/)"),                                              # code comments (C, JS, C#, Go …)
    re.compile(r"^\s*(?:import|from|export|const|let|var|function|class|def|public|private|"
               r"using|namespace|return|if|for|while|#include)\b[^" + _CJK_LETTERS + r"]*[;{}()=:]\s*$"),
    re.compile(r"^\s*(?:\d+\s*\|)|^\s*>\s*\d+\s*\|"),                             # code frames "12 | ..."
    re.compile(r"^\s*(?:[✓✗×✔✘●○◯•▶]|\d+ (?:pass|fail|passed|failed|errors?|warnings?)\b)"),
    re.compile(r"^\s*\"[\w$.-]+\"\s*:\s*\S"),                                   # JSON members ("message": ...)
    re.compile(r"\b(?:sonarqube|sonarlint|eslint|pylint|ruff|mypy)\([\w.-]+(?::[\w.-]+)?\)\s*$|"  # IDE problem lines
               r"\[\+\d+ locations?\]", re.I),
    re.compile(f"^\\s*[{_EMOJI}]"),                                              # a console UI's menu or status line
    re.compile(f"(?:[{_EMOJI}][^{_EMOJI}]*){{3}}"),                                  # … or its legend (three emoji)
    re.compile(r"^\s*[\w@./-]+\.(?:js|mjs|cjs|ts|tsx|jsx|vue|svelte)(?::\d+)+\s"),   # a browser console's source prefix
    re.compile(r"^\s*at [\w.<>`$\[\]]+\(.*\)(?: in \S.*)?$"),                        # a .NET frame without a line
    re.compile(r"\b(?:succeeded|failed)(?: with \d+ (?:error|warning)\(s\))? \(\d+(?:\.\d+)?s\)"),  # dotnet build / test
    re.compile(r"^\s*(?:-\w,?\s+)?--?[a-z][\w-]*(?:[ =](?:<[\w-]+>|[A-Z_]+))?\s{2,}[A-Z]"),  # a CLI's option help
]
_QUOTE = re.compile(r"^\s*>")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_SLASH = re.compile(r"^\s*/[A-Za-z][\w-]*(?:\s+[A-Z][\w-]*)*\s*")
# templates an agent or IDE writes into the user's turn
_TEMPLATES = [
    re.compile(r"Implement the plan as specified.*", re.S),
    re.compile(r"To-do's from the plan have already been created.*", re.S),
    re.compile(r"For the code present, we get this error:.*", re.S),
    re.compile(r"^Fix this bug\.\.\..*", re.S),
    re.compile(r"<(?:command-name|command-message|command-args|local-command-stdout|system-reminder)>.*?"
               r"</(?:command-name|command-message|command-args|local-command-stdout|system-reminder)>", re.S),
    re.compile(r"^Explore the codebase structure of .*", re.S),
]
LONG_MESSAGE_LINES = 15      # longer messages are mostly pasted material: keep their head and tail
KEEP_EDGE_LINES = 3
MAX_LINE = 400               # a single line longer than this is a paste (minified output, a log line) ...
MAX_PROSE_LINE = 4000        # ... unless it reads as prose: a paragraph typed without line breaks
_WORDISH = re.compile(r"^[A-Za-z][a-z']*[,.;:!?]?$")


def _prose(line: str) -> bool:
    """A long line a person typed: mostly short plain words, no long tokens (paths, hashes, minified code)."""
    if len(line) > MAX_PROSE_LINE or _CJK.search(line):
        return bool(_CJK.search(line)) and len(line) <= MAX_PROSE_LINE and len(_LETTER.findall(line)) > 0.6 * len(line)
    toks = line.split()
    if len(toks) < 40:
        return False
    words = sum(bool(_WORDISH.match(t)) for t in toks)
    return words >= 0.8 * len(toks) and sum(len(t) > 25 for t in toks) <= 2


# a person writing about an error ("KeyError when I call delete() — see below"), not the error itself
# ("KeyError: 'id'"; "NameError: … Did you mean: 'x'?" starts as the error does)
_ABOUT_ERROR = re.compile(r"^(?![\w.]*(?:Error|Exception|Warning)\b:)(?=.*(?:\bI\b(?!/)|\b(?i:my|me|we|our|you|your|please|why)\b))")


def _machine(line: str) -> bool:
    if any(p.search(line) for p in _MACHINE):
        return True
    letters = len(_LETTER.findall(line))
    visible = len(line.strip())
    if visible and letters / visible < 0.5:                    # symbols, numbers, hashes
        return True
    if not _CJK.search(line) and error_signatures(line, limit=1) and not _ABOUT_ERROR.search(line):
        return True
    return False


@lru_cache(maxsize=4096)
def user_voice(text: str) -> str:
    """The parts of a user message the user wrote as instruction or statement, one line each."""
    if not text:
        return ""
    for tpl in _TEMPLATES:
        text = tpl.sub("", text)
    out: list[str] = []
    in_fence = False
    for raw in text.replace("\r", "").split("\n"):
        if _FENCE.match(raw):
            in_fence = not in_fence
            continue
        if in_fence or raw.startswith(("    ", "\t")) or _QUOTE.match(raw) or _HEADING.match(raw):
            continue
        line = raw.strip()
        if not line or (len(line) > MAX_LINE and not _prose(line)):
            continue
        if _machine(line):
            continue
        line = _SLASH.sub("", line) if not out else line
        line = _MENTION.sub(" ", _URL.sub(" ", line))
        line = re.sub(r"\s+", " ", line).strip()
        if len(_LETTER.findall(line)) >= 2:
            out.append(line)
    if len(out) > LONG_MESSAGE_LINES:
        out = out[:KEEP_EDGE_LINES] + out[-KEEP_EDGE_LINES:]
    return "\n".join(out)


_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Za-z" + _CJK_LETTERS + r"`\"'(])|(?<=[。！？；;])|\n+|(?<=[" + _CJK_LETTERS
                    + r"])[，,]\s*(?=(?:但|而|并且|另外|然后))")


def sentences(text: str) -> list[str]:
    """Split the user's voice into sentences (EN punctuation followed by space; CJK punctuation)."""
    parts = [p.strip(" \t-*•,，。；;") for p in _SPLIT.split(text or "") if p]
    return [p for p in parts if len(_LETTER.findall(p)) >= 2]
