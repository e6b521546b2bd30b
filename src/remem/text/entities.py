"""Entities at write time: paths, symbols, packages, commands, error types, URLs, and names of
people and places in chat text. Extraction is pure regex work (no model, no numpy), cheap
enough to run inside the write transaction; co-occurrence edges link entities of one turn.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

MAX_PER_TURN = 24
MAX_SCAN_CHARS = 20_000  # entities of a huge tool output are mostly noise; bound the work

_URL = re.compile(r"https?://[^\s<>\"'`)\]]+")
# possessive runs (++, *+): none of these classes holds the character that must follow, so giving
# characters back can never match; without it every long token is retried character by character
_PATH = re.compile(r"(?<![\w@])(?:~/|\.{1,2}/|/)?(?:[\w.@+-]++/)+[\w.@+-]+"
                   r"|\b[\w-]++\.(?:py|js|ts|tsx|jsx|go|rs|java|rb|c|h|cpp|md|json|toml|yaml|yml|sh|sql|lock)\b")
_SYMBOL = re.compile(r"\b[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)+\b|\b[a-z]++(?:_[a-z0-9]++)+\b"
                     r"|\b[a-z]++(?:[A-Z][a-z0-9]++)+\b|\b(?:[A-Z][a-z0-9]++){2,}\b")
_PACKAGE = re.compile(r"\b(?:pip3? install|uv (?:add|pip install)|npm (?:install|i|add)|pnpm add|yarn add|"
                      r"cargo add|go get|gem install|brew install|apt(?:-get)? install)\s+((?:-{1,2}[\w-]+\s+)*)"
                      r"([@\w./-]+(?:\s+[@\w./-]+){0,3})")
_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w.]+))", re.M)
_COMMANDS = (r"\s*(?:\$\s+)?(git|npm|pnpm|yarn|pip|uv|cargo|go|make|docker|kubectl|pytest|"
             r"python3?|node|bash|ruff|mypy|terraform|gh)\s+([a-z][\w-]*)")
_COMMAND = re.compile(r"(?:^|\n)" + _COMMANDS)
# the same in two parts: at the start, then after a newline (a literal first character, which the
# regex engine looks for at C speed instead of trying the alternation at every position)
_COMMAND_START = re.compile(_COMMANDS)
_COMMAND_LINE = re.compile(r"\n" + _COMMANDS)
_ERROR = re.compile(r"\b([A-Z][A-Za-z]*(?:Error|Exception))\b|\b(E\d{3,5}|TS\d{4}|error\[E\d{4}\])")
_NOT_PACKAGES = frozenset("then and && || ; to in on with from for or git npm run".split())
# Capitalised words (and runs of them) in prose: people, places, products.
_NAME = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2}|[A-Z]{2,6})\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]\s*|[\"'(]\s*)$")
_NOT_NAMES = frozenset(
    "I I'm The A An And But Or If So Then This That These Those It Its We You He She They My Our Your "
    "His Her Their What When Where Why How Who Which Yes No Ok Okay Hey Hi Hello Thanks Thank Sure Also "
    "Just Maybe Well Oh Wow Great Good Nice Cool Awesome Really Let Please Do Does Did Is Are Was Were "
    "Have Has Had Can Could Would Should Will Not Now Here There Today Yesterday Tomorrow Monday Tuesday "
    "Wednesday Thursday Friday Saturday Sunday January February March April May June July August "
    "September October November December OK TODO FIXME NOTE API URL JSON HTTP CLI".split()
)


# a capitalised word right after a lower-case word or a comma: seen mid-sentence
_MID_SENTENCE = re.compile(r"(?<=[a-z,])\s+([A-Z][a-z]+|[A-Z]{2,6})\b")


def _names(text: str) -> Iterator[str]:
    mid: set[str] | None = None  # one pass for all names, only when a name needs it
    for m in _NAME.finditer(text):
        word = m.group(1)
        first = word.split()[0]
        if first in _NOT_NAMES:
            # "The Hague" stays out, but the rest of a run may still be a name
            rest = word.split()[1:]
            if not rest:
                continue
            word = " ".join(rest)
        if _SENTENCE_START.search(text[max(0, m.start() - 3):m.start()]) and " " not in word:
            # sentence-initial single words are usually just capitalised; keep those seen mid-sentence
            if mid is None:
                mid = set(_MID_SENTENCE.findall(text))
            if word not in mid:
                continue
        yield word.lower()


class _Found:
    """Distinct (kind, name) pairs in the order found. Kinds are searched most specific first and
    only the first MAX_PER_TURN are kept, so once it is full nothing later can change the result:
    the search stops there instead of reading the rest of a long tool output."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], None] = {}
        self.paths: set[str] = set()  # every path and error name (symbols inside them are left out)

    def add(self, kind: str, name: str) -> bool:
        """Record one; True when full."""
        if kind in ("path", "error"):
            self.paths.add(name)
        if name:
            self.items.setdefault((kind, name[:200]), None)
        return len(self.items) >= MAX_PER_TURN

    def result(self) -> list[tuple[str, str]]:
        return list(self.items)[:MAX_PER_TURN]


def _maybe_package(text: str) -> bool:
    """Whether ``text`` can hold an install command at all (every one _PACKAGE knows has one of these)."""
    return "install" in text or " add" in text or "go get" in text or "npm i" in text


def _commands(text: str) -> Iterator[re.Match[str]]:
    """``_COMMAND.finditer(text)``, faster."""
    pos = 0
    first = _COMMAND_START.match(text)
    if first:
        yield first
        pos = first.end()
    yield from _COMMAND_LINE.finditer(text, pos)


def extract(text: str, *, query: bool = False) -> list[tuple[str, str]]:
    """Distinct (kind, name) pairs in ``text``, most specific kinds first, at most MAX_PER_TURN."""
    text = (text or "")[:MAX_SCAN_CHARS]
    f = _Found()
    for m in _URL.finditer(text):
        if f.add("url", m.group(0).rstrip(".,;:")):
            return f.result()
    scrubbed = _URL.sub(" ", text) if f.items else text
    words = scrubbed.split()
    # a path holds '/' or '.', a symbol '.', '_' or a capital: the patterns read only the words that
    # can hold one (each match lies inside one blank-separated word, and a blank stays either side)
    for m in _PATH.finditer(" ".join([w for w in words if "/" in w or "." in w])):
        p = m.group(0)
        if (len(p) > 3 and "/" in p or "." in p) and f.add("path", p.rstrip(".,;:")):
            return f.result()
    for m in _PACKAGE.finditer(scrubbed) if _maybe_package(scrubbed) else ():
        for p in m.group(2).split():
            if p.lower() in _NOT_PACKAGES:
                break
            if f.add("package", p.lower().rstrip(".,;:")):
                return f.result()
    for m in _IMPORT.finditer(scrubbed) if "import" in scrubbed else ():
        if f.add("package", (m.group(1) or m.group(2)).split(".")[0].lower()):
            return f.result()
    for m in _commands(scrubbed):
        if f.add("command", f"{m.group(1)} {m.group(2)}"):
            return f.result()
    # an error name holds 'rror' or 'xception', a code a digit; both lie inside one word
    for m in _ERROR.finditer(" ".join([w for w in words if "rror" in w or "xception" in w
                                       or not w.isalpha() and ("E" in w or "TS" in w)])):
        if f.add("error", m.group(1) or m.group(2)):
            return f.result()
    paths = f.paths
    for m in _SYMBOL.finditer(" ".join([w for w in words if "." in w or "_" in w or not w.islower()])):
        s = m.group(0)
        if s not in paths and len(s) >= 4 and not any(s in p for p in paths) and f.add("symbol", s):
            return f.result()
    for n in _names(scrubbed):
        if len(n) >= 2 and f.add("name", n):
            break
    return f.result()


def turn_text(request: str, reply: str, actions: str = "") -> str:
    return "\n".join(x for x in (request, reply, actions[:4000]) if x)

