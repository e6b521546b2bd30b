"""Shared helper: replace one ``## Section`` of bench/RESULTS.md, keeping the others."""

from __future__ import annotations

import re
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
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
