"""Shared helper: replace one ``## Section`` of bench/RESULTS.md, keeping the others.

The harnesses live in the package (``remem.bench``); the results file stays in the source checkout's
``bench/`` folder. From an installed wheel there is no checkout: ``--write`` then writes
``bench/RESULTS.md`` under the current directory.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

_PKG_ROOT = Path(__file__).resolve().parents[3]          # src/remem/bench/results.py -> the checkout
CHECKOUT = _PKG_ROOT if (_PKG_ROOT / "pyproject.toml").is_file() else Path.cwd()
RESULTS = CHECKOUT / "bench" / "RESULTS.md"
HEADER = ("# Benchmark results\n\nMeasured on the project's 2-core development machine; every section says "
          "the command that reproduces it. Machines are noisy: compare ratios within one run.\n")


def update_section(title: str, body: str) -> None:
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else HEADER
    stamp = time.strftime("%Y-%m-%d")
    block = f"## {title}\n\n_Measured {stamp}._\n\n{body.strip()}\n"
    pat = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pat.search(text):
        text = pat.sub(lambda _m: block + "\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    RESULTS.write_text(text, encoding="utf-8")
