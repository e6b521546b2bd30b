"""Measure redaction on the broad corpus of issue 13, and its speed on real-shaped tool output.

    .venv/bin/python -m remem.bench.redaction_broad [--baseline OLD_REDACT_PY]

The corpus is tests/fixtures/redact/corpus.py (every major provider's token shapes, credential
files, connection strings, cookies, short and all-letter passwords, and look-alikes), the one
tests/test_redact.py asserts on through ``remem add`` / ``remem get``. Speed is measured on 5-20 KB
texts (slices of the stdlib's code and of the look-alike corpus, as tool output arrives in a turn);
``--baseline`` names another version of redact.py, e.g.
``git show b11fafd:src/remem/ingest/redact.py > /tmp/redact_before.py``, timed interleaved with this
one (best of 7 rounds each), so that a busy machine slows both alike. Prints the figures and writes
them to the ``## Redaction: broad corpus`` section of the checkout's bench/RESULTS.md (appended at
the end the first time; other sections are left as they are). Needs a source checkout.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Callable
from datetime import date
from pathlib import Path
from types import ModuleType

from remem.ingest.redact import redact, redact_text

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## Redaction: broad corpus"


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tool_outputs(lookalikes: list[str], total: int = 2_000_000) -> list[str]:
    """Real-shaped 5-20 KB texts: 60 % slices of the stdlib's code, 40 % of the look-alikes joined
    (logs, config, lockfiles, code)."""
    r = random.Random(5)
    files = [p.read_text(encoding="utf-8", errors="replace")
             for p in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))]
    logs = "\n".join(lookalikes)
    out, size = [], 0
    while size < total:
        n = r.randint(5000, 20000)
        src = r.choice(files) if r.random() < 0.6 else logs
        i = r.randrange(max(1, len(src) - n))
        out.append(src[i:i + n])
        size += len(out[-1].encode())
    return out


def interleaved(funcs: dict[str, Callable[[str], object]], texts: list[str],
                rounds: int = 7) -> dict[str, tuple[float, float]]:
    """(MB/s, µs per text) of each function, best of ``rounds`` interleaved runs (wall time)."""
    size = sum(len(t.encode()) for t in texts) / 1e6
    best = dict.fromkeys(funcs, float("inf"))
    for _ in range(rounds):
        for name, fn in funcs.items():
            start = time.perf_counter()
            for text in texts:
                fn(text)
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: (size / t, t / len(texts) * 1e6) for name, t in best.items()}


def report(baseline: Path | None) -> str:
    corpus = load_module(ROOT / "tests" / "fixtures" / "redact" / "corpus.py", "redact_fixture_corpus")
    snippets = load_module(ROOT / "tests" / "data" / "redact" / "redact_corpus.py", "redact_corpus")
    secrets, lookalikes = corpus.secret_cases(), corpus.lookalike_cases()
    missed = [c for c in secrets if any(s in redact_text(c.text) for s in c.secrets)]
    altered = [t for t in lookalikes if redact_text(t) != t]
    families = Counter(c.family for c in secrets)
    missed_by = Counter(c.family for c in missed)
    funcs: dict[str, Callable[[str], object]] = {"this version": redact}
    if baseline:
        funcs = {"baseline": load_module(baseline, "redact_baseline").redact, **funcs}
    texts = tool_outputs(lookalikes)
    big = interleaved(funcs, texts)
    small = interleaved(funcs, snippets.ordinary_cases() * 3)
    for case in missed[:5]:
        print("missed:", case.family, repr(case.text[:160]))
    for text in altered[:5]:
        print("altered:", repr(text[:160]), "->", repr(redact_text(text)[:160]))
    lines = [
        SECTION,
        "",
        f"_Measured {date.today().isoformat()}._",
        "",
        f"`tests/fixtures/redact/corpus.py` (issue 13): {len(secrets)} synthetic secrets of {len(families)} "
        "families (AWS key pairs in credentials.csv and prose, GCP service-account JSON, Azure, GitHub, "
        "GitLab, Bitbucket, Atlassian, Slack, Stripe, Twilio, SendGrid, Mailgun, OpenAI, Anthropic, "
        "HuggingFace, npm, PyPI, Docker, DigitalOcean, Heroku, Shopify, Square, Telegram, Discord, Okta, "
        "Vault, …, JWTs, private keys, credential files, connection strings, cookies, basic-auth URLs, "
        f"short and all-letter passwords, .env values with `( * % #`) and {len(lookalikes)} look-alikes "
        "(git SHAs, sha256/sha512, UUIDs, lockfile integrity strings, base64 test data, placeholders, "
        "password-handling code in six languages, env dumps, minified code, long identifiers). "
        "tests/test_redact.py asserts the same rates through `remem add` / `remem get` (the library for "
        "the bulk, the CLI for the issue's shapes). Target: ≥ 99 % caught, ≤ 1 % altered. Speed: wall "
        "time, best of 7 interleaved rounds; \"baseline\" is the redactor before issue 13.",
        "",
        "Command: `git show b11fafd:src/remem/ingest/redact.py > /tmp/redact_before.py && "
        ".venv/bin/python -m remem.bench.redaction_broad --baseline /tmp/redact_before.py`",
        "",
        "| measure | value |",
        "|---|---|",
        f"| secrets caught (every secret part gone) | {1 - len(missed) / len(secrets):.2%} "
        f"({len(secrets) - len(missed)}/{len(secrets)}) |",
        f"| look-alikes altered | {len(altered) / len(lookalikes):.2%} ({len(altered)}/{len(lookalikes)}) |",
        *(f"| speed, {len(texts)} tool outputs of 5-20 KB ({name}) | {mbs:.1f} MB/s, {us:.0f} µs per text |"
          for name, (mbs, us) in big.items()),
        *(f"| speed, 120-character snippets ({name}) | {us:.0f} µs per call |" for name, (_, us) in small.items()),
        "",
        "Misses per family: " + (", ".join(f"{k} {n}/{families[k]}" for k, n in missed_by.items()) or "none") + ".",
        "",
    ]
    return "\n".join(lines)


def write_section(text: str) -> None:
    """Replace this section of RESULTS.md, or append it at the end; keep the others."""
    old = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n"
    lines = old.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == SECTION), None)
    if start is None:
        new = old.rstrip("\n") + "\n\n" + text
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        new = "\n".join([*lines[:start], *text.rstrip("\n").splitlines(), *([""] + lines[end:] if end < len(lines) else [])])
    RESULTS.write_text(new.rstrip("\n") + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, help="another redact.py to compare the speed with")
    args = parser.parse_args()
    text = report(args.baseline)
    print(text)
    write_section(text)


if __name__ == "__main__":
    main()
