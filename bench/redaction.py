"""Measure secret redaction: catch rate, false-positive rate and speed.

    .venv/bin/python bench/redaction.py

Prints the figures and writes them to the ``## Redaction`` section of bench/RESULTS.md (other
sections are left as they are). The corpora come from tests/data/redact/redact_corpus.py, the
same ones tests/test_redact.py asserts on.
"""

from __future__ import annotations

import importlib.util
import sys
import sysconfig
import time
from collections import Counter
from datetime import date
from pathlib import Path

from remem.ingest.redact import redact, redact_text

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## Redaction"


def load_corpus():
    path = ROOT / "tests" / "data" / "redact" / "redact_corpus.py"
    spec = importlib.util.spec_from_file_location("redact_corpus", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["redact_corpus"] = module
    spec.loader.exec_module(module)
    return module


def stdlib_files(limit: int = 4_000_000) -> list[str]:
    """Real code and docstrings: the stdlib's top-level .py files, about ``limit`` bytes."""
    files, size = [], 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        files.append(path.read_text(encoding="utf-8", errors="replace"))
        size += len(files[-1])
        if size >= limit:
            break
    return files


def stdlib_scan() -> tuple[int, float, list[str]]:
    """Redact every .py file of the stdlib (tests included, site-packages excluded): how many
    files, how many MB, and which files changed with what kinds."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files, size, altered = 0, 0, []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        files, size = files + 1, size + len(text.encode())
        result = redact(text)
        if result.count:
            altered.append(f"`{path.relative_to(root)}` ({', '.join(sorted(result.kinds))})")
    return files, size / 1e6, altered


def speed(texts: list[str], repeat: int = 5) -> tuple[float, float]:
    """(MB/s of UTF-8 input, µs per call): best of ``repeat`` runs, in CPU time so that other
    processes on a busy machine disturb it less."""
    size = sum(len(t.encode()) for t in texts)
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for text in texts:
            redact(text)
        best = min(best, time.process_time() - start)
    return size / 1e6 / best, best / len(texts) * 1e6


def main() -> None:
    corpus = load_corpus()
    secrets, ordinary = corpus.secret_cases(), corpus.ordinary_cases()

    missed = [c for c in secrets if c.secret in redact_text(c.text)]
    wrong_kind = [c for c in secrets if c.kind not in redact(c.text).kinds]
    altered = [t for t in ordinary if redact_text(t) != t]
    per_kind = Counter(c.kind for c in secrets)
    missed_kind = Counter(c.kind for c in missed)

    big = "\n".join(ordinary)
    big = big * (4_000_000 // len(big) + 1)
    code = stdlib_files()
    speeds = {
        "ordinary corpus joined into one 4 MB text": speed([big]),
        f"stdlib .py files, one call per file ({len(code)} files, 4 MB)": speed(code),
        f"ordinary snippets, one call each (avg {sum(map(len, ordinary)) // len(ordinary)} chars)": speed(ordinary * 5),
        "secret corpus, one call per case": speed([c.text for c in secrets]),
    }

    n_files, stdlib_mb, stdlib_altered = stdlib_scan()

    catch = 1 - len(missed) / len(secrets)
    fp = len(altered) / len(ordinary)
    lines = [
        SECTION,
        "",
        f"_Measured {date.today().isoformat()}._",
        "",
        f"`remem.ingest.redact` on the seeded corpora in `tests/data/redact/redact_corpus.py`: {len(secrets)} "
        f"real-shaped fake secrets ({len(per_kind)} kinds, {min(per_kind.values())}+ each) in logs, .env, JSON, "
        f"curl, code and stack traces; {len(ordinary)} ordinary code/config/log/prose snippets. "
        "Speed is CPU time, best of 5. Target: ≥ 99 % caught, ≤ 1 % altered, > 20 MB/s.",
        "",
        "Command: `.venv/bin/python bench/redaction.py`",
        "",
        "| measure | value |",
        "|---|---|",
        f"| catch rate (secret gone from output) | {catch:.2%} ({len(secrets) - len(missed)}/{len(secrets)}, "
        f"{len(per_kind)} kinds) |",
        f"| reported kind as expected | {1 - len(wrong_kind) / len(secrets):.2%} |",
        f"| false-positive rate (ordinary snippet altered) | {fp:.2%} ({len(altered)}/{len(ordinary)}) |",
        f"| real code: Python stdlib, every .py file ({n_files} files, {stdlib_mb:.0f} MB) | "
        f"{len(stdlib_altered)} files altered |",
        *(f"| speed: {name} | {mbs:.1f} MB/s, {us:.0f} µs per call |" for name, (mbs, us) in speeds.items()),
        "",
        "Stdlib files altered (each holds example credentials or a data: URL): " + ("; ".join(stdlib_altered) or "none") + ".",
        "",
        "Misses per kind: " + (", ".join(f"{k} {n}/{per_kind[k]}" for k, n in missed_kind.items()) or "none") + ".",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    for case in missed[:5]:
        print("missed:", case.kind, repr(case.text[:160]))
    for text in altered[:5]:
        print("altered:", repr(text[:160]), "->", repr(redact_text(text)[:160]))
    write_section(report)


def write_section(report: str) -> None:
    """Replace (or append) the ``## Redaction`` section of RESULTS.md, keeping the others."""
    old = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n"
    lines = old.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == SECTION), None)
    if start is None:
        new = old.rstrip("\n") + "\n\n" + report
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        before, after = "\n".join(lines[:start]), "\n".join(lines[end:])
        new = (before.rstrip("\n") + "\n\n" if before.strip() else "") + report + ("\n" + after if after else "")
    RESULTS.write_text(new.rstrip("\n") + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
