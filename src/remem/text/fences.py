"""Markdown code fences, one pattern for every reader of replies (the learner, the embedding texts)."""

from __future__ import annotations

import re

#: a fenced code block, closed or running to the end of the text (a reply cut short inside one)
FENCED = re.compile(r"```.*?(?:```|\Z)", re.S)
