"""Normalization: unicode form, control characters, roles, timestamps, stable ids."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from ..errors import RememError

_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class InputError(RememError, ValueError):
    """Input that cannot be stored as given (the message is shown to the user as is)."""


def clean_text(text: str | None) -> str:
    """NFC, no NUL/control characters (tabs and newlines kept), no lone surrogates, \\n newlines."""
    if not text:
        return ""
    if not isinstance(text, str):
        raise InputError(f"expected text, got {type(text).__name__}")
    ascii_only = text.isascii()
    if not ascii_only:
        text = _SURROGATE.sub("\ufffd", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CTRL.sub("", text)
    return (text if ascii_only else unicodedata.normalize("NFC", text)).strip()


# context that agents or remem itself injected into the user's turn: never part of the request
_INJECTED = re.compile(
    r"<(remem_memory_context|hook_context|remem_resume)\b[^>]*>.*?</\1>\s*|</?current_user_request>", re.S | re.I)


def strip_injected(text: str) -> str:
    """Remove remem's own packets and hook-injected context blocks from a request."""
    if "<" not in text:
        return text
    return _INJECTED.sub("", text).strip()


def check_user_text(text: str) -> str:
    """Strict validation for text a person typed or piped: reject instead of silently fixing."""
    if "\x00" in text:
        raise InputError("text contains NUL bytes")
    if _SURROGATE.search(text):
        raise InputError("text is not valid UTF-8")
    if not text.strip():
        raise InputError("text is empty")
    return text


def decode_bytes(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"input is not valid UTF-8 (byte {e.start})") from None


def sha(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def norm_request(text: str) -> str:
    """A request reduced for matching the same prompt from two writers (hook vs importer)."""
    return re.sub(r"\s+", " ", text).strip().lower()[:2000]
