"""The one way any stored text reaches an agent: :func:`safe` (pure, standard library only).

Every renderer that puts memory text in front of an agent — the turn-start packet, the
SessionStart digest, ``/remem-resume`` lists and episodes, the repair hint, the plugin operations
(search / get / resume) and the MCP tools — passes that text through :func:`safe`, so nothing a
memory holds can look like structure remem wrote:

- NFKC folding (full-width ``＜`` and friends become ``<``) and every line break Unicode knows
  (CR, VT, FF, FS/GS/RS, NEL, LS, PS) becomes ``\\n`` before anything is decided;
- invisible characters go: C0/C1 controls (but ``\\n`` and ``\\t``), format characters (zero-width
  space / joiners, soft hyphen, bidi embeddings, overrides and isolates U+202A–202E, U+2066–2069,
  BOM), Unicode tag characters U+E0000–E007F (which can spell a whole hidden instruction),
  variation selectors (which can smuggle bytes after an emoji), Hangul fillers, lone surrogates;
- no tag can open or close: a ``<`` (or a look-alike angle bracket) that starts something
  tag-like becomes ``&lt;``, and a memory's own ``&lt;`` becomes ``&amp;lt;``;
- no memory line can start a line of the rendered text: inline (``indent=None``) everything is
  one line; with ``indent`` every continuation line starts with it, so a memory cannot forge an
  item header (``2. [codex …]``), a ``## Turn 9`` or a ``User:`` line.

The hook process imports this module (it must stay standard-library only and cheap to import).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

ELLIPSIS = "…"

# every line break str.splitlines() knows, plus CRLF first
_BREAKS = re.compile("\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# characters that draw nothing (or nothing a reader notices) but reach the model all the same
_INVISIBLE = re.compile(
    "["
    "\x00-\x08\x0e-\x1f\x7f-\x9f"            # C0 (but \t \n) and C1 controls, DEL
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"  # soft hyphen, CGJ, ALM, fillers, FVS
    "\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2"          # Arabic / Syriac format marks
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f"              # zero-width, marks, bidi, invisible ops
    "\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb"   # blank braille, fillers, VS1-16, BOM
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff"                               # tag characters, VS17-256, reserved
    "\ud800-\udfff"                                        # lone surrogates
    "]")
# '<' or a look-alike that starts something tag-like: spaces and '/' allowed, then a letter,
# '_', '!' or '?' (NFKC already folded ＜ and ﹤; these survive it)
_TAGLIKE = re.compile("[<\u2039\u2329\u27e8\u3008\u29fc\u1438\u02c2\u276e\u2770\u27ea]"
                      r"(?=\s*/?\s*[A-Za-z_!?])")
_ENTITY = re.compile(r"&(?=(?:lt|gt|amp|quot|apos|#\d+|#x[0-9a-fA-F]+);)", re.I)


def safe(text: Any, *, indent: str | None = None, limit: int | None = None) -> str:
    """``text`` made inert for an agent (see the module doc).

    ``indent=None``: one line (every run of whitespace, line breaks included, is one space).
    ``indent="   "``: lines kept (blank ones dropped), each continuation line starting with
    ``indent``; ``indent=""`` keeps lines as they are (for text that stays inside a JSON string
    or is indented later with :func:`indent_lines`). ``limit``: at most that many characters of
    content, cut with "…" (the cut happens before escaping, so an escape is never cut in half).
    """
    s = "" if text is None else str(text)
    if limit is not None and len(s) > 4 * limit + 64:
        s = s[: 4 * limit + 64]            # bound the work; NFKC and removal only ever shrink much
    if not s.isascii():
        s = unicodedata.normalize("NFKC", s)
    s = _BREAKS.sub("\n", s)
    s = _INVISIBLE.sub("", s)
    if indent is None:
        s = " ".join(s.split())
    else:
        s = "\n".join(ln.rstrip() for ln in s.strip().split("\n") if ln.strip())
    if limit is not None and len(s) > limit:
        s = s[: max(1, limit - 1)].rstrip() + ELLIPSIS
    s = _ENTITY.sub("&amp;", s)
    s = _TAGLIKE.sub("&lt;", s)
    return indent_lines(s, indent) if indent else s


def indent_lines(text: str, indent: str) -> str:
    """Lay out text that :func:`safe` already escaped: continuation lines start with ``indent``."""
    return ("\n" + indent).join(ln.rstrip() for ln in text.splitlines() if ln.strip())


def attr(text: Any, limit: int = 200) -> str:
    """:func:`safe` for a value inside a double-quoted attribute of a wrapper tag."""
    return safe(text, limit=limit).replace('"', "&quot;")


def safe_tree(value: Any) -> Any:
    """Every string inside ``value`` (dicts, lists) through ``safe(…, indent="")``, for the
    JSON answers the plugin operations and MCP tools hand to an agent. Keys stay as they are."""
    if isinstance(value, str):
        return safe(value, indent="")
    if isinstance(value, dict):
        return {k: safe_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [safe_tree(v) for v in value]
    return value


def relative_age(seconds: float | None) -> str:
    """How long ago, in words ("just now", "3 days ago"): the ages every packet and list shows."""
    if seconds is None:
        return "unknown age"
    s = max(0.0, seconds)
    if s < 90:
        return "just now"
    if s < 3600:
        return f"{round(s / 60)} minutes ago"
    if s < 86400:
        h = round(s / 3600)
        return "1 hour ago" if h == 1 else f"{h} hours ago"
    days = s / 86400
    if days < 2:
        return "yesterday"
    if days < 14:
        return f"{int(days)} days ago"
    if days < 60:
        return f"{int(days // 7)} weeks ago"
    if days < 730:
        return f"{int(days // 30)} months ago"
    return f"{int(days // 365)} years ago"
