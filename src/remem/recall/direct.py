"""Direct hits first, and a relevance floor: pure functions over ranked candidates.

*Guard.* Evidence (the turn's session ranks well, a neighbour was found) lifts a candidate, but
never above a direct hit that holds more of the query's word weight (coverage.py): a note added
with ``remem add`` has no session, so it can never earn a session's lift, and an exact identifier
in it was ranked 10th behind turns of a well-matching session that held none of the query's words.

*Floor.* A candidate stays only when something says it is related: a channel whose match means it
(same error, shared entity, a named time range), a vector clearly closer to the query than the
owner's typical memory (the related margin), enough of the query's word weight, or evidence from
a candidate that is itself related (a turn of its session, its neighbour). Without it ``search``
returned its 10 nearest memories for a question nothing in the store was about.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .gate import REASONS as MEANINGFUL  # a hit here is a reason of its own
from .gate import SPECS, spec
from .gate import VECTOR_CHANNELS as VECTOR_CHANNELS
from .gate import WORD_CHANNELS as WORD_CHANNELS

EPS = 1e-7
STRONG = 0.75  # a direct hit holding this much of the query's word weight is a ceiling for lifted turns


def guard(order: Sequence[tuple[str, float]], base: Mapping[str, float], cover: Mapping[str, float],
          direct: set[str], ratio: float = 0.5) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """``order`` (best first) with each candidate's evidence capped: a candidate's score may rise
    from ``base`` (its score without evidence) up to, never past, the score of a direct hit (in
    ``direct``) that holds at least STRONG of the query's word weight and of which it holds less
    than ``ratio`` of the coverage. Candidates without a
    coverage in ``cover`` are left as they are. Returns (new order, capped id → score it had)."""
    score = dict(order)
    capped: dict[str, float] = {}
    # settle the best-covered first: a direct hit's own (possibly capped) score is the ceiling below it
    todo = sorted((t for t in score if t in cover), key=lambda t: -cover[t])
    settled: list[str] = []  # the direct hits settled so far holding STRONG of the words: the only ceilings
    # The ceilings a candidate may meet are the settled hits holding more than 1 / ratio of its
    # coverage: a prefix of ``settled`` (settled in falling coverage) that only grows as coverage
    # falls. The lowest ceiling below its score is the prefix's lowest score, when that is below it.
    reach, lowest = 0, None
    for t in todo:
        while reach < len(settled) and cover[t] < ratio * cover[settled[reach]]:
            s = score[settled[reach]]
            lowest = s if lowest is None or s < lowest else lowest
            reach += 1
        ceiling = lowest if lowest is not None and lowest < score[t] else None
        if ceiling is not None:
            # just below the ceiling, those capped under one ceiling keep their order
            new = max(base.get(t, score[t]), ceiling - EPS / (1.0 + score[t]))
            if new < score[t]:
                capped[t] = score[t]
                score[t] = new
        if t in direct and cover[t] >= STRONG:
            settled.append(t)
    return sorted(score.items(), key=lambda x: (-x[1], x[0])), capped


def reasons(channels: Mapping[str, Mapping[str, Any]], cover: float | None, related: Mapping[str, float | None],
            least: float) -> list[str]:
    """Why a candidate is related (empty: nothing says so). ``related``: vector channel → the cosine
    a hit must reach (None: the model has no calibrated margin, every hit counts)."""
    out = [c for c in channels if c in MEANINGFUL or c not in SPECS and spec(c).gated]  # a gated plugin channel
    for c in channels:
        if c in VECTOR_CHANNELS and c in related:
            floor = related[c]
            if floor is None or float(channels[c].get("score", 0.0)) >= floor:
                out.append(c)
    if cover is not None and cover >= least and set(channels) & WORD_CHANNELS:
        out.append("words")
    return out


def floor(order: Sequence[tuple[str, float]], why: Mapping[str, list[str]], groups: Mapping[str, str],
          neighbours_of: Mapping[str, Sequence[str]]) -> list[tuple[str, float]]:
    """``order`` without the candidates nothing relates (``why`` empty or missing), except those
    whose session holds a related candidate, or whose neighbour is one."""
    ok = {t for t, r in why.items() if r}
    sessions = {groups.get(t) for t in ok} - {None, ""}
    return [(t, s) for t, s in order if t in ok or (groups.get(t) or None) in sessions
            or any(n in ok for n in neighbours_of.get(t, ()))]
