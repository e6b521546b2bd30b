"""Query building: from the user's text to everything the channels need.

Pure. The text index receives terms (``store.protocols.TextTerm``), never a query string: the
engine's syntax (FTS5 MATCH expressions) is built inside the store, every term quoted there.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass, field

from ..ingest.signatures import error_signatures
from ..store.protocols import TextQuery, TextTerm
from ..text import entities as ent
from ..text.segment import CJK_RUN, WORD, bigrams, has_cjk

# Function words and question words: they match everything and carry no topic.
STOP = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being am do does "
    "did done have has had i me my we our you your he him his she her it its they them their this that "
    "these those what which who whom whose when where why how not no so than too very can could will would "
    "should shall may might must just about into over also there here then s t any some all get got "
    "please let lets us".split()
)
MAX_TERMS = 24

_IDENT = re.compile(
    r"https?://[^\s<>\"'`]+"                                   # URLs
    r"|(?:~|\.{1,2})?(?:/[\w.@+-]+)+/?"                         # absolute / relative paths
    r"|[\w.@+-]+(?:/[\w.@+-]+)+"                               # a/b/c
    r"|[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|java|rb|c|h|cpp|md|json|toml|yaml|yml|sh|sql|lock|cfg|ini)\b"
    r"|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(?"                  # dotted symbols: os.path.join
    r"|\b[a-z]+(?:_[a-z0-9]+)+\b"                               # snake_case
    r"|\b[a-z]+(?:[A-Z][a-z0-9]+)+\b|\b(?:[A-Z][a-z0-9]+){2,}\b"  # camelCase / PascalCase
    r"|\b[A-Z]{1,5}-?\d{2,6}\b"                                 # error codes: E501, TS2304, ERR-42
    r"|\b[0-9a-f]{7,40}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # ids, shas
    r"|\bt_[0-9a-f]{6,}\b"
)


@dataclass(frozen=True, slots=True)
class TimeRange:
    label: str
    since: float
    until: float


@dataclass(slots=True)
class Query:
    text: str
    words: list[str] = field(default_factory=list)        # lower-case words, stop words removed
    all_words: list[str] = field(default_factory=list)    # every word, in order, repeats kept
    cjk_runs: list[str] = field(default_factory=list)
    cjk_words: list[str] = field(default_factory=list)    # jieba words (≥ 2 chars) of the runs
    identifiers: list[str] = field(default_factory=list)
    entities: list[tuple[str, str]] = field(default_factory=list)
    error_sigs: list[str] = field(default_factory=list)
    times: list[TimeRange] = field(default_factory=list)
    cjk_terms: list[TextTerm] = field(default_factory=list)  # CJK runs and words for the word index
    substrings: list[str] = field(default_factory=list)     # terms of 3+ characters for the trigram index
    short: list[str] = field(default_factory=list)  # terms too short for the trigram index

    @property
    def empty(self) -> bool:
        return not (self.words or self.cjk_runs or self.identifiers)


def cjk_words(runs: list[str]) -> list[str]:
    """Words of two or more CJK characters (jieba search mode), falling back to bigrams."""
    if not runs:
        return []
    from ..text.segment import query_tokenizer

    jb = query_tokenizer()
    out: list[str] = []
    for run in runs:
        if len(run) <= 2:
            out.append(run)
            continue
        if jb is not None:
            out.extend(w for w in jb.cut_for_search(run) if len(w) >= 2 and has_cjk(w))
        else:
            out.extend(bigrams(run))
    return list(dict.fromkeys(out))


def cjk_terms(runs: list[str], cwords: list[str]) -> list[TextTerm]:
    """The CJK runs, then their words: each matched in the index as its characters in order."""
    return list(dict.fromkeys(TextTerm(t, cjk=True) for t in [*runs, *cwords]))


def text_query(q: Query) -> TextQuery:
    """Every word and CJK term of the query, any of them (the plain word-index query)."""
    return TextQuery(tuple(dict.fromkeys([*(TextTerm(w) for w in q.words), *q.cjk_terms])))


def identifiers(text: str, limit: int = 12) -> list[str]:
    out = []
    for m in _IDENT.finditer(text or ""):
        t = m.group(0).rstrip(".,:;!?)(")
        if len(t) >= 3 and t not in out:
            out.append(t)
        if len(out) >= limit:
            break
    return out


def substring_terms(text: str, idents: list[str], words: list[str], runs: list[str]) -> list[str]:
    """Trigram terms: identifiers as typed, CJK runs of ≥ 3 characters, long words."""
    out = list(idents)
    out += [r for r in runs if len(r) >= 3]
    out += [w for w in words if len(w) >= 5]
    return list(dict.fromkeys(out))[:16]


def build(text: str, *, now: float | None = None, stop: frozenset[str] = STOP) -> Query:
    text = text or ""
    all_words = [w.lower() for w in WORD.findall(text) if w.strip("_")]
    words = list(dict.fromkeys(w for w in all_words if w not in stop))[:MAX_TERMS]
    if not words:
        words = list(dict.fromkeys(all_words))[:MAX_TERMS]
    runs = list(dict.fromkeys(CJK_RUN.findall(text)))[:MAX_TERMS]
    cw = cjk_words(runs)
    idents = identifiers(text)
    q = Query(text=text, words=words, all_words=all_words, cjk_runs=runs, cjk_words=cw,
              identifiers=idents, entities=ent.extract(text, query=True),
              error_sigs=error_signatures(text), times=time_ranges(text, now if now is not None else time.time()))
    q.cjk_terms = cjk_terms(runs, [w for w in cw if w not in runs])
    q.substrings = [t for t in substring_terms(text, idents, words, runs) if len(t) >= 3]
    q.short = [t for t in [*words, *runs] if len(t) < 3]
    return q


# ------------------------------------------------------------------- time expressions

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
_UNIT = {"minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400, "month": 30 * 86400, "year": 365 * 86400}
_NUMS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
         "ten": 10, "few": 3, "couple": 2}
_AGO = re.compile(r"\b(\d+|a|an|one|two|three|four|five|six|seven|ten|few|couple(?: of)?)\s+"
                  r"(minute|hour|day|week|month|year)s?\s+ago\b", re.I)
_LAST = re.compile(r"\b(last|this|past|previous)\s+(week|month|year)\b", re.I)
_MONTH_YEAR = re.compile(r"\b(?:in\s+)?(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) +
                         r")\.?(?:\s+(\d{4}))?\b", re.I)
_ISO = re.compile(r"\b((?:19|20)\d{2})-(\d{1,2})(?:-(\d{1,2}))?\b")  # a plausible year: not "iso-8859-2"
_YEAR = re.compile(r"\b(?:in|during|since)\s+((?:19|20)\d{2})\b", re.I)
# Chinese expressions: (first day, day after the last) relative to today
_ZH = {"今天": (0, 1), "昨天": (-1, 0), "前天": (-2, -1), "上周": (-14, 0), "本周": (-7, 1), "这周": (-7, 1),
       "上个月": (-60, 0), "这个月": (-30, 1), "本月": (-30, 1), "去年": (-730, -300), "最近": (-14, 1)}


def _day_start(ts: float) -> float:
    t = time.localtime(ts)
    return time.mktime((t.tm_year, t.tm_mon, t.tm_mday, 0, 0, 0, 0, 0, -1))


def _month_range(year: int, month: int) -> tuple[float, float]:
    start = time.mktime((year, month, 1, 0, 0, 0, 0, 0, -1))
    ny, nm = (year + 1, 1) if month == 12 else (year, month + 1)
    return start, time.mktime((ny, nm, 1, 0, 0, 0, 0, 0, -1))


_DAY_MONTHS = {**_MONTHS, "sept": 9}
_MONTH_ALT = "|".join(sorted(_DAY_MONTHS, key=len, reverse=True))
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH_ALT})\.?,?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH_ALT})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)


def _written_days(text: str) -> list[tuple[re.Match[str], float]]:
    """Days written with a month name ("3 June, 2023", "June 3rd 2023"): (match, local midnight)."""
    out = []
    for rx, dg, mg in ((_DAY_MONTH_YEAR, 1, 2), (_MONTH_DAY_YEAR, 2, 1)):
        for m in rx.finditer(text):
            t = _midnight(int(m.group(3)), _DAY_MONTHS[m.group(mg).lower()], int(m.group(dg)))
            if t is not None:
                out.append((m, t))
    return out


def _midnight(y: int, mo: int, d: int) -> float | None:
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return None
    try:
        t = time.mktime((y, mo, d, 0, 0, 0, 0, 0, -1))
    except (OverflowError, ValueError):
        return None
    return t if time.localtime(t).tm_mday == d else None  # 31 June is not a day


def named_days(text: str) -> list[float]:
    """Local midnights of the calendar days ``text`` names ("3 June, 2023", "June 3rd 2023", "2023-06-03")."""
    found = [t for _, t in _written_days(text)]
    found += [t for m in _ISO.finditer(text) if m.group(3)
              and (t := _midnight(int(m.group(1)), int(m.group(2)), int(m.group(3)))) is not None]
    return list(dict.fromkeys(found))


def time_ranges(text: str, now: float) -> list[TimeRange]:
    """Time expressions in ``text`` as [since, until) ranges of epoch seconds (local time)."""
    out: list[TimeRange] = []
    low = text.lower()
    today = _day_start(now)
    if re.search(r"\btoday\b", low):
        out.append(TimeRange("today", today, now + 1))
    if re.search(r"\byesterday\b", low):
        out.append(TimeRange("yesterday", today - 86400, today))
    for m in _AGO.finditer(text):
        raw = m.group(1).lower().split()[0]
        n = int(raw) if raw.isdigit() else _NUMS.get(raw, 1)
        span = _UNIT[m.group(2).lower()]
        center = now - n * span
        out.append(TimeRange(m.group(0), center - max(span, 86400), center + max(span, 86400)))
    for m in _LAST.finditer(text):
        span = _UNIT[m.group(2).lower()]
        back = span if m.group(1).lower() == "this" else 2 * span
        out.append(TimeRange(m.group(0), now - back, now + 1))
    for m in _ISO.finditer(text):
        y, mo = int(m.group(1)), int(m.group(2))
        if not 1 <= mo <= 12:
            continue
        if m.group(3):
            try:
                start = time.mktime((y, mo, int(m.group(3)), 0, 0, 0, 0, 0, -1))
            except (OverflowError, ValueError):
                continue
            out.append(TimeRange(m.group(0), start, start + 86400))
        else:
            out.append(TimeRange(m.group(0), *_month_range(y, mo)))
    days = _written_days(text)
    for m, t in days:
        out.append(TimeRange(m.group(0).strip(), t, t + 86400))
    for m in _MONTH_YEAR.finditer(text):
        if any(d.start() <= m.start() < d.end() for d, _ in days):
            continue  # the month of a written day ("3 June, 2023"), not a month of its own
        word = m.group(1).lower()
        if word in ("may", "march") and not m.group(2) and not m.group(0).lower().startswith("in"):
            continue  # "may" and "march" are usually not months without a year or "in"
        mo = _MONTHS[word]
        year = int(m.group(2)) if m.group(2) else time.localtime(now).tm_year
        if not m.group(2) and _month_range(year, mo)[0] > now:
            year -= 1
        out.append(TimeRange(m.group(0).strip(), *_month_range(year, mo)))
    for m in _YEAR.finditer(text):
        y = int(m.group(1))
        out.append(TimeRange(m.group(0), time.mktime((y, 1, 1, 0, 0, 0, 0, 0, -1)),
                             time.mktime((y + 1, 1, 1, 0, 0, 0, 0, 0, -1))))
    for word, (first, after) in _ZH.items():
        if word in text:
            out.append(TimeRange(word, today + first * 86400, today + after * 86400))
    uniq: dict[tuple[float, float], TimeRange] = {}
    for r in out:
        uniq.setdefault((r.since, r.until), r)
    return list(uniq.values())[:4]
