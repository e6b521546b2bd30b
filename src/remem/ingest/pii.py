"""Personal data as typed placeholders, for text that leaves remem (datasets, shared files).

Stored turns already had their secrets replaced by ``redact`` (``[REDACTED:kind]``); what a
fine-tuning set or a shared rules file must also lose is who the user is: e-mail addresses, phone
numbers, identity numbers (US SSN, Chinese resident ID, IBAN), payment card numbers, street
addresses and the user's name inside home-directory paths. ``scrub(text)`` replaces each with a
typed placeholder (``<EMAIL>``, ``<PHONE>``, ``<ID>``, ``<CARD>``, ``<ADDRESS>``, ``<PATH>``,
``<SECRET>``) and counts them. Deterministic, stdlib only, no model.

Code is full of numbers that look like personal data, so every rule needs more than digits:
card numbers pass Luhn *and* start with a card network's prefix (a 13-digit millisecond timestamp
starts with 1 and is never one); Chinese IDs carry a valid birth date and check digit; IBANs
pass mod 97; a phone number needs a ``+`` country code, brackets around the area code, or the
fixed 3-3-4 grouping, or a Chinese mobile prefix — never a dotted version, a date, a time, an
IP address or a hex digest. ``anonymise_paths`` is the milder form for files the user keeps
(``~`` for the home directory, ``<user>`` for other people's).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..text.cjk import LETTERS as CJK

__all__ = ["PLACEHOLDERS", "ScrubResult", "anonymise_paths", "luhn_ok", "scrub"]

PLACEHOLDERS = ("<SECRET>", "<EMAIL>", "<CARD>", "<ID>", "<PHONE>", "<ADDRESS>", "<PATH>")


@dataclass(slots=True)
class ScrubResult:
    text: str
    kinds: dict[str, int] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(self.kinds.values())


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# -- rules ------------------------------------------------------------------------------------

_SECRET = re.compile(r"\[REDACTED:[a-z0-9_]+\]")

# local part, @, a domain whose last label is letters (so ``pkg@1.2.3`` and ``@types/node`` stay)
_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}"
                    r"[A-Za-z0-9])?\.)+[A-Za-z]{2,24}\b", re.ASCII)
_NOT_PEOPLE = frozenset(("git", "noreply", "no-reply"))

# 13–19 digits, contiguous or in groups of 4 (Amex 4-6-5) separated by one space or dash
_CARD = re.compile(r"(?<![\w.:/-])(?:\d{4}(?:[ -]\d{4}){2,3}(?:[ -]\d{1,3})?|\d{4}[ -]\d{6}[ -]\d{5}|\d{13,19})"
                   r"(?![\w.:/-]|,\d)", re.ASCII)
_CARD_PREFIX = re.compile(r"4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|6(?:011|5|4[4-9])|35")

_SSN = re.compile(r"(?<![\w.:/-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w.:/-])", re.ASCII)
_CN_ID = re.compile(r"(?<![\w.:/-])[1-9]\d{5}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]"
                    r"(?![\w.:/-])", re.ASCII)
_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_IBAN = re.compile(r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?!\w)", re.ASCII)

# a phone number: +CC then 6–13 more digits in groups; (area) 3-4; 3-3-4 with one separator kind;
# a Chinese mobile number (1[3-9] + 9 digits) standing alone
_PHONE = re.compile(
    r"(?<![\w+/.:-])(?:"
    r"\+[1-9]\d{0,2}(?:[ .-]?\(\d{1,4}\))?(?:[ .-]?\d{2,5}){2,5}"
    r"|\(\d{3}\)[ ]?\d{3}[ -]\d{4}"
    r"|\d{3}(?P<sep>[ .-])\d{3}(?P=sep)\d{4}"
    r"|1[3-9]\d(?:[ -]?\d{4}){2}"
    r")(?![\w.:/-]|,\d)", re.ASCII)

_STREET = (r"Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|"
           r"Parkway|Pkwy|Square|Sq|Highway|Hwy|Straße|Strasse|Rue")
_STREET_WORDS = tuple(_STREET.split("|"))
_ADDRESS = re.compile(
    r"\b\d{1,5}[A-Za-z]?,? (?:[A-Z][a-z'’.-]+ ){1,4}(?:" + _STREET + r")\b\.?"
    r"(?:,? (?:Apt|Suite|Ste|Unit|#)\.? ?\w{1,6})?", re.ASCII)
_ADDRESS_CN = re.compile(
    rf"(?:[{CJK}]{{2,8}}?(?:省|市|区|县|镇)){{1,4}}[{CJK}]{{1,10}}?(?:路|街|大道|巷|胡同|里)"
    rf"\d{{1,5}}(?:号|弄)(?:[{CJK}\d]{{0,8}}?(?:室|楼|单元|栋|座))?", re.ASCII)

# the user's part of a home-directory path: /home/NAME, /Users/NAME, C:\Users\NAME, /mnt/c/Users/NAME
_HOME = re.compile(r"(?:(?<![\w.])[A-Za-z]:[\\/]+(?:Users|users)|(?<![\w.])/mnt/[a-z]/(?:Users|users)"
                   r"|(?<![\w.~])/(?:home|Users))"
                   r"[\\/]+(?P<user>[A-Za-z_][A-Za-z0-9._-]{0,63}|<user>)(?=[\\/\s'\"`):,;\]]|$)", re.ASCII)
_NOT_USERS = frozenset(("shared", "public", "default", "all users", "runner", "node", "ubuntu", "user", "<user>"))


_NUMBERISH = re.compile(r"\d(?:[ ().-]{0,2}\d){6}")
_HOME_WORDS = ("home", "Users", "users")


def _cn_id_ok(s: str) -> bool:
    total = sum(int(c) * w for c, w in zip(s[:17], _CN_WEIGHTS, strict=True))
    return "10X98765432"[total % 11] == s[17].upper()


def _iban_ok(s: str) -> bool:
    s = s.replace(" ", "")
    if not 15 <= len(s) <= 34:
        return False
    moved = s[4:] + s[:4]
    num = "".join(str(int(c, 36)) for c in moved)
    return int(num) % 97 == 1


def _card_ok(s: str) -> bool:
    digits = re.sub(r"[ -]", "", s)
    if not 13 <= len(digits) <= 19 or len(set(digits)) < 2:
        return False
    return bool(_CARD_PREFIX.match(digits)) and luhn_ok(digits)


_PHONE_CUE = re.compile(rf"(?i)(?:\b(?:phone|tel|mobile|cell|call|sms|whatsapp|wechat|contact|fax)\b|[{CJK}])"
                        r"[^\n]{0,24}\Z")


def _phone_ok(m: re.Match[str]) -> bool:
    s = m.group(0)
    digits = re.sub(r"\D", "", s)
    if not 7 <= len(digits) <= 15 or len(set(digits)) < 3:
        return False
    bare = s.lstrip("+").isdigit()
    if s.startswith("+") and len(digits) < 8:
        return False
    if bare and s.startswith("+") and m.string[m.start() - 1:m.start()] in ("'", '"'):
        return True      # "+14155550132": E.164 in a string
    if bare or m["sep"] == " ":   # digits alone, or 3-3-4 split by spaces: only where the text speaks of a
        return bool(_PHONE_CUE.search(m.string, max(0, m.start() - 30), m.start()))   # phone (or in Chinese)
    return True


def _sub(pattern: re.Pattern[str], text: str, placeholder: str, kinds: dict[str, int],
         check: Callable[[str], bool] | None = None, *, whole: Callable[[re.Match[str]], bool] | None = None) -> str:
    def repl(m: re.Match[str]) -> str:
        if check is not None and not check(m.group(0)) or whole is not None and not whole(m):
            return m.group(0)
        kinds[placeholder] = kinds.get(placeholder, 0) + 1
        return placeholder

    return pattern.sub(repl, text)


def _email_ok(s: str) -> bool:
    return s.split("@", 1)[0].lower() not in _NOT_PEOPLE


def _paths(text: str, kinds: dict[str, int], own: str, other: str, home: str | None) -> str:
    if home:
        h = home.rstrip("/\\")
        if len(h) > 1:
            pat = re.compile(r"(?<![\w.])" + re.escape(h) + r"(?=[\\/\s'\"`):,;\]]|$)", re.ASCII)
            n = len(pat.findall(text))
            if n:
                text = pat.sub(lambda _m: own, text)
                kinds[own] = kinds.get(own, 0) + n

    def repl(m: re.Match[str]) -> str:
        if m["user"].lower() in _NOT_USERS:
            return m.group(0)
        kinds[other] = kinds.get(other, 0) + 1
        if other == "<PATH>":
            return other
        return m.group(0)[:m.start("user") - m.start()] + other

    return _HOME.sub(repl, text) if any(w in text for w in _HOME_WORDS) else text


def scrub(text: str, *, home: str | None = None) -> ScrubResult:
    """Every secret marker and piece of personal data in ``text`` as a typed placeholder.

    ``home`` is the user's home directory (default ``$HOME``): a path under it, like any
    ``/home/NAME`` or ``C:\\Users\\NAME`` prefix, becomes ``<PATH>`` (the rest of the path stays:
    ``<PATH>/proj/src/app.py``)."""
    kinds: dict[str, int] = {}
    if not text:
        return ScrubResult(text, kinds)
    if "[REDACTED:" in text:
        text = _sub(_SECRET, text, "<SECRET>", kinds)
    text = _paths(text, kinds, "<PATH>", "<PATH>", os.path.expanduser("~") if home is None else home)
    if "@" in text:
        text = _sub(_EMAIL, text, "<EMAIL>", kinds, _email_ok)
    if _NUMBERISH.search(text):        # every number rule needs 7 digits in a row (single separators)
        text = _sub(_IBAN, text, "<ID>", kinds, _iban_ok)
        text = _sub(_CN_ID, text, "<ID>", kinds, _cn_id_ok)
        text = _sub(_CARD, text, "<CARD>", kinds, _card_ok)
        text = _sub(_SSN, text, "<ID>", kinds)
        text = _sub(_PHONE, text, "<PHONE>", kinds, whole=_phone_ok)
    if any(w in text for w in _STREET_WORDS):
        text = _sub(_ADDRESS, text, "<ADDRESS>", kinds)
    if "号" in text or "弄" in text:
        text = _sub(_ADDRESS_CN, text, "<ADDRESS>", kinds)
    return ScrubResult(text, kinds)


def anonymise_paths(text: str, *, home: str | None = None) -> str:
    """Home-directory paths made shareable: the user's own home → ``~``, another user's name →
    ``<user>`` (``/home/<user>/…``, ``C:\\Users\\<user>\\…``). Idempotent."""
    kinds: dict[str, int] = {}
    return _paths(text, kinds, "~", "<user>", os.path.expanduser("~") if home is None else home)
