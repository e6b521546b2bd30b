"""Build src/remem/recall/wordfreq.txt: how common each English word is in general technical prose.

The packet's word gate (recall/channels.py ``coverage``) weighs a prompt's words by how rare they are
in this reference as well as in the store, so the words a topic's memories share still weigh
(the store alone says "kubeconfig" is in every memory, so it weighs nothing there).

Source: the docstrings and comments of Python's own standard library (PSF licence, redistributable);
each docstring and each run of comment lines is one document. Words are split as the word index splits
them (letters and digits, lower case); test modules are left out (their strings are data).

    python scripts/build_wordfreq.py [STDLIB_DIR]    # default: the running Python's stdlib
"""

from __future__ import annotations

import io
import re
import sys
import sysconfig
import tokenize
from collections import Counter
from pathlib import Path

TOKEN = re.compile(r"[^\W_]+")
KEEP = 20_000   # the most common words; the rest count as unseen (the rarest)
MIN_DF = 3
OUT = Path(__file__).resolve().parent.parent / "src" / "remem" / "recall" / "wordfreq.txt"


def documents(path: Path):
    try:
        src = path.read_text(encoding="utf-8")
        toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (SyntaxError, UnicodeDecodeError, tokenize.TokenError, IndentationError, OSError):
        return
    comment: list[str] = []
    prev = None
    for tok in toks:
        if tok.type == tokenize.COMMENT:
            comment.append(tok.string.lstrip("#"))
            continue
        if tok.type in (tokenize.NL, tokenize.NEWLINE) and comment:
            continue
        if comment:
            yield " ".join(comment)
            comment = []
        # a docstring: a string that is a statement of its own
        if tok.type == tokenize.STRING and (prev is None or prev.type in (tokenize.INDENT, tokenize.NEWLINE,
                                                                           tokenize.DEDENT, tokenize.NL)):
            yield tok.string
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            prev = tok
    if comment:
        yield " ".join(comment)


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(sysconfig.get_paths()["stdlib"])
    df: Counter[str] = Counter()
    n = 0
    for path in sorted(root.rglob("*.py")):
        parts = set(path.relative_to(root).parts)
        if parts & {"test", "tests", "idle_test", "site-packages", "dist-packages", "lib2to3", "encodings"}:
            continue
        for doc in documents(path):
            words = {w.lower() for w in TOKEN.findall(doc) if not w.isdigit() and w.isascii()}
            if len(words) < 3:
                continue
            n += 1
            df.update(words)
    common = [(w, c) for w, c in df.most_common(KEEP) if c >= MIN_DF]
    lines = [f"# documents\t{n}", "# word document frequencies in the docstrings and comments of Python's "
             "standard library (PSF licence); scripts/build_wordfreq.py"]
    lines += [f"{w}\t{c}" for w, c in sorted(common, key=lambda x: (-x[1], x[0]))]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(common)} words from {n} documents -> {OUT}")


if __name__ == "__main__":
    main()
