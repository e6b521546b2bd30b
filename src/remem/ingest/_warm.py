"""Imported once by the import workers' forkserver (``workers.PreparePool``): what every worker
needs — the pipeline and jieba's dictionary (~0.6 s) — loaded before the workers are forked from it."""

from ..text.segment import dictionary
from . import pipeline  # noqa: F401  (redaction rules, entity patterns)

dictionary()
