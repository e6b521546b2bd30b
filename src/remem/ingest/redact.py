"""Secret redaction: every text passes through here before it is stored or logged.

Stdlib only, because the hook process imports it. Each rule is a precompiled regex and a
function that decides, per match, whether it is a secret and what replaces it. Rules run in a
fixed order, most specific first: provider tokens before generic ``key=value`` assignments.
Replacements are short, greppable markers such as ``[REDACTED:github_token]``; where a key name,
user or host gives useful context it is kept (``DB_PASSWORD=[REDACTED:password]``). No rule
matches a marker, so redacting twice changes nothing.

Speed: the work happens on the UTF-8 bytes. Patterns start with a literal, so the regex engine
skips through text with a fast substring search instead of trying each position, and a rule is
skipped when its trigger substrings (or a long enough run of token characters) are absent.
Rules that ignore case search ``data.lower()``, whose offsets equal those of ``data`` because
``bytes.lower`` only touches ASCII letters. Every match starts and ends on an ASCII byte, so
splicing never cuts a multi-byte character.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .secret_shapes import SHAPES
from .secret_values import (
    _CALL_START,
    _CODE_REF,
    _HAS_ALPHA,
    _HAS_DIGIT,
    _NON_VALUES,
    _PLACEHOLDER_START,
    _PLACEHOLDER_WORDS,
    _UUID,
    _WORDY,
    _annotation,
    _at_word_start,
    _b64_size,
    _code_value,
    _human_size,
    _key_kind,
    _key_start,
    _looks_secret,
    _min_len,
    _mixed_case,
    _non_value,
    _random_body,
    _text,
    _trim,
)

__all__ = ["KINDS", "RedactResult", "marker", "redact", "redact_text"]


@dataclass(slots=True)
class RedactResult:
    """The redacted text, how many spans were replaced, and how many of each kind."""

    text: str
    count: int = 0
    kinds: dict[str, int] = field(default_factory=dict)


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


Edit = tuple[int, int, str, bytes]  # replace data[start:end] with the bytes; count it as kind
Decide = Callable[[re.Match[bytes], bytes], Edit | None]


class _Pattern:
    """A rule's regex, compiled the first time the rule runs: most rules are gated off by their
    triggers on any given text, and compiling all of them cost every short-lived process that
    redacts (each hook call) ~10 ms."""

    __slots__ = ("source", "flags", "_re")

    def __init__(self, source: bytes, flags: int) -> None:
        self.source, self.flags = source, flags
        self._re: re.Pattern[bytes] | None = None

    def finditer(self, data: bytes) -> Iterator[re.Match[bytes]]:
        if self._re is None:
            self._re = re.compile(self.source, self.flags)
        return self._re.finditer(data)


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: _Pattern
    decide: Decide
    triggers: tuple[bytes, ...]  # the rule runs only if one of these occurs in what it searches…
    min_run: int  # …and the text has a run of this many base64/token characters
    nocase: bool  # the pattern is lower-case and searches data.lower()
    compact: bool  # a whole token of _TOKEN_BYTES: look for its triggers in the long runs only
    heads: tuple[bytes, ...]  # …and first of all for one of these two-byte word starts (empty: no such gate)


# ---------------------------------------------------------------- decisions


def _edit(m: re.Match[bytes], kind: str, group: int | str = 0) -> Edit:
    return m.start(group), m.end(group), kind, marker(kind).encode()


def _token(kind: str, check: Callable[[str], bool] | None = None) -> Decide:
    """A provider token: the whole match, if it starts a word (and passes ``check``)."""

    def decide(m: re.Match[bytes], data: bytes) -> Edit | None:
        if not _at_word_start(data, m.start()) or (check and not check(_text(m[0]))):
            return None
        return _edit(m, kind)

    return decide


def _whole(kind: str) -> Decide:
    return lambda m, data: _edit(m, kind)


def _sk_key(m: re.Match[bytes], data: bytes) -> Edit | None:
    """``sk-ant-…`` is Anthropic's; other ``sk-…`` with a random-looking body is OpenAI's."""
    if not _at_word_start(data, m.start()):
        return None
    if m["ant"]:
        return _edit(m, "anthropic_key")
    return _edit(m, "openai_key") if _random_body(_text(m[0])) else None


def _stripe_key(m: re.Match[bytes], data: bytes) -> Edit | None:
    """``sk_live_…`` / ``rk_test_…``; the pattern starts at the ``k`` to keep a literal prefix."""
    start = m.start() - 1
    if not _at_word_start(data, start):
        return None
    return start, m.end(), "stripe_key", marker("stripe_key").encode()


def _url_password(m: re.Match[bytes], data: bytes) -> Edit | None:
    pw = _text(m["pw"])
    if pw.startswith(_PLACEHOLDER_START) or len(set(pw)) < 2 or pw.lower() in _PLACEHOLDER_WORDS:
        return None
    return _edit(m, "url_password", "pw")


def _is_basic_credential(value: str) -> bool:
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return ":" in decoded and decoded.isprintable()


def _auth_header(m: re.Match[bytes], data: bytes) -> Edit | None:
    """``Bearer <token>``, ``token <token>`` or ``Basic <base64 user:pass>`` (matched in lower case)."""
    value = _text(data[m.start("val"):m.end("val")])
    if not _at_word_start(data, m.start()):
        return None
    if m["scheme"] == b"basic":
        return _edit(m, "basic_auth", "val") if _is_basic_credential(value) else None
    if m["scheme"] == b"token" and _UUID.fullmatch(value):  # "token 1b4e28ba-… expired": an id in a log
        return None
    min_len = 12 if m["scheme"] == b"bearer" else 16
    return _edit(m, "bearer_token", "val") if _looks_secret(value, min_len) else None


def _cli_password(m: re.Match[bytes], data: bytes) -> Edit | None:
    """``curl -u user:pass``; also ``mysql … -pPASS`` (see _mysql_password)."""
    pw = _text(m["pw"])
    if len(pw) < 4 or pw.startswith(_PLACEHOLDER_START) or pw.lower() in _PLACEHOLDER_WORDS:
        return None
    return _edit(m, "password", "pw") if _at_word_start(data, m.start()) else None


def _line_before(data: bytes, pos: int, reach: int = 512) -> bytes:
    """The line's text before ``pos``, its last ``reach`` bytes at most (a long line without a
    newline must not make every match scan back to its start: that is quadratic)."""
    lo = max(0, pos - reach)
    return data[data.rfind(b"\n", lo, pos) + 1 or lo:pos]


def _mysql_password(m: re.Match[bytes], data: bytes) -> Edit | None:
    """``-pPASS`` on a line that runs mysql, mysqldump, mysqladmin…"""
    return _cli_password(m, data) if b"mysql" in _line_before(data, m.start()) else None


def _assignment(m: re.Match[bytes], data: bytes) -> Edit | None:
    """``key=value`` in env, JSON, YAML, INI, code, headers, URLs or CLI flags, found at a secret-ish
    word inside the key: redact the value when the whole key names a secret and the value is not a
    placeholder or code. A password is redacted whatever its length; other secrets need ≥ 8
    characters mixing letters with digits or symbols."""
    key_start = _key_start(data, m.start())
    key = _text(data[key_start:m.end("rest")])
    kind = _key_kind(key)
    sep = m["sep"]
    spaced = not sep.strip()  # `--password X`, `aws_secret_access_key X`
    if kind is None or (spaced and not key.startswith("-") and kind != "aws_secret_key"):
        return None
    if data[max(0, key_start - 2):key_start] == b"${":  # ${DB_PASSWORD:-postgres}: a shell default
        return None
    group = "qval" if m["qval"] is not None else "bval"
    vstart, vend = m.start(group), m.end(group)
    line_head = _line_before(data, key_start).strip() in (b"", b"export")
    if group == "bval":
        vend = _trim(data, vstart, vend)
        value = _text(data[vstart:vend])
        if b":" in sep and (value.startswith("!") or (_annotation(data, vend) and kind != "password")):
            return None  # `key: Type,` / `key: Type | None`, `{key: variable}`, YAML `!vault`
        if _code_value(value, data, vend, sep, key_start, line_head):
            return None
        if line_head and b"=" in sep and b":" not in sep:  # .env, INI: the value runs to the next blank
            while vend < len(data) and data[vend] > 0x20 and data[vend] not in b"\"'`":
                vend += 1
            vend = _trim(data, vstart, vend)
    value = _text(data[vstart:vend])
    if not value or _non_value(value):
        return None
    if kind == "password":
        if group == "bval" and b"=" not in sep and value.isalpha() and re.match(rb"[ \t]+[A-Za-z]", data[vend:vend + 2]):
            return None  # prose or a docstring: "- password:     The password for …"
    elif " " in value or not _looks_secret(value, _min_len(kind, key), True):
        return None
    return vstart, vend, kind, marker(kind).encode()


def _data_url(m: re.Match[bytes], data: bytes) -> Edit | None:
    mime = _text(m["mime"] or b"")
    note = f"[data:{mime};base64 · {_human_size(_b64_size(m['b64']))} removed]"
    return m.start(), m.end(), "data_url", note.encode()


def _private(m: re.Match[bytes], data: bytes) -> Edit | None:
    """A ``<private>`` span, unless it only shows the syntax (``<private>…</private>``)."""
    return None if m["body"].strip() in (b"", b"...", "…".encode()) else _edit(m, "private")


_URL_HEAD = re.compile(rb"[A-Za-z][\w+.-]*://[^\s\"'<>()]*\Z")


def _base64_blob(m: re.Match[bytes], data: bytes) -> Edit | None:
    """A long base64 run, unless it is really a long path, identifier or part of a URL."""
    if _URL_HEAD.search(data, max(0, m.start() - 300), m.start()):
        return None
    run = _text(m[0])
    seps = sum(run.count(c) for c in "/_-+")
    if seps * 12 > len(run) or not _HAS_DIGIT.search(run) or not _mixed_case(run) or _WORDY.fullmatch(run):
        return None
    return m.start(), m.end(), "base64", f"[base64 · {_b64_size(m[0])} bytes removed]".encode()


def _shape(kind: str) -> Decide:
    """A provider token from secret_shapes: starts a word and has a random body."""
    def decide(m: re.Match[bytes], data: bytes) -> Edit | None:
        token = _text(m[0])
        start = m.start()
        if not (_at_word_start(data, start) or data[start - 4:start] == b"/bot"):  # Telegram's API URLs
            return None
        if not (_HAS_DIGIT.search(token) or _mixed_case(token)):
            return None
        return None if _WORDY.fullmatch(token) else _edit(m, kind)

    return decide


def _discord(m: re.Match[bytes], data: bytes) -> Edit | None:
    """A Discord bot token ``<base64 user id>.<6>.<27-38>``, found at its first dot."""
    head = re.search(rb"(?<![\w.-])[MNO][A-Za-z\d]{23,25}\Z", data[max(0, m.start() - 26):m.start()])
    if head is None or not (_HAS_DIGIT.search(_text(m[0])) and _mixed_case(_text(m[0]))):
        return None
    return m.start() - (len(head[0])), m.end(), "discord_token", marker("discord_token").encode()


def _aws_secret(m: re.Match[bytes], data: bytes) -> Edit | None:
    """A 40-character base64 run in a text that names AWS or held an access key id: the secret
    access key beside its id (credentials.csv, prose, tables). Matched in lower case."""
    value = _text(data[m.start():m.end()])
    if value.count("/") + value.count("+") > 6 or "EXAMPLE" in value:
        return None
    if not (_HAS_DIGIT.search(value) and _mixed_case(value)) or _WORDY.fullmatch(value):
        return None
    return _edit(m, "aws_secret_key")


_NAME_BEFORE = re.compile(rb"""(?:name|key)["']?[ \t]*[:=][ \t]*["']?(?P<key>[\w.-]{2,80}+)["']?"""
                          rb"""[ \t]*(?:,[ \t]*|\r?\n[ \t]*(?:-[ \t]*)?|[ \t]+)["']?\Z""")


def _name_value(m: re.Match[bytes], data: bytes) -> Edit | None:
    """``- name: DB_PASSWORD`` then ``value: …`` (Kubernetes env, ECS, GitHub Actions,
    ``<add key="…" value="…"/>``), found at ``value`` (lower case) with the name just before it."""
    window = data[max(0, m.start() - 120):m.start()]
    head = _NAME_BEFORE.search(window.lower())
    if head is None:
        return None
    kind = _key_kind(_text(window[head.start("key"):head.end("key")]))
    group = "qv" if m["qv"] is not None else "bv"
    value = _text(data[m.start(group):m.end(group)])
    if kind is None or _non_value(value):
        return None
    if kind != "password" and not _looks_secret(value, 8, True):
        return None
    return m.start(group), m.end(group), kind, marker(kind).encode()


_SESSION_COOKIE = re.compile(r"(?i)sess|sid|token|auth|remember|jwt|login|identity|csrf|xsrf|secret|key")
_COOKIE_PAIR = re.compile(r"([^=;\s]+)=([^;\s]*)")


def _cookie(m: re.Match[bytes], data: bytes) -> Edit | None:
    """A Cookie / Set-Cookie header or ``curl -b``: values of session-like cookies, and any
    random-looking value of 16+ characters."""
    val = _text(data[m.start("val"):m.end("val")])
    hits = 0

    def sub(pm: re.Match[str]) -> str:
        nonlocal hits
        name, value = pm[1], pm[2]
        if not value or value.startswith(("[REDACTED", "$", "{", "<")) or value.lower() in _NON_VALUES:
            return pm[0]
        if (_SESSION_COOKIE.search(name) and len(value) >= 8) or (
                len(value) >= 16 and _HAS_ALPHA.search(value) and _HAS_DIGIT.search(value)
                and not re.fullmatch(r"[\d.]+|GA\d[\d.]+|[\w.-]+\.[a-z]{2,}", value)):
            hits += 1
            return f"{name}={marker('cookie')}"
        return pm[0]

    new = _COOKIE_PAIR.sub(sub, val)
    return (m.start("val"), m.end("val"), "cookie", new.encode()) if hits else None


def _group(kind: str, group: str, check: Callable[[str], bool] | None = None) -> Decide:
    """Redact one group of the match (if it passes ``check``)."""
    def decide(m: re.Match[bytes], data: bytes) -> Edit | None:
        value = _text(m[group])
        if _non_value(value) or (check and not check(value)):
            return None
        return _edit(m, kind, group)

    return decide


def _xml_element(m: re.Match[bytes], data: bytes) -> Edit | None:
    """``<password>…</password>``, ``<apiToken>…</apiToken>`` (not ``<passwordPolicy>``)."""
    kind = _key_kind(_text(data[m.start("tag"):m.end("tag")]))
    value = _text(data[m.start("val"):m.end("val")])
    if kind is None or _non_value(value) or (kind != "password" and not _looks_secret(value, 8, True)):
        return None
    return m.start("val"), m.end("val"), kind, marker(kind).encode()


def _prose_password(m: re.Match[bytes], data: bytes) -> Edit | None:
    """"the password is tr0ub4dor", "use password Zebra77! to log in": a value that mixes letters
    with digits (so "the password reset flow" and "passwd anonymous@" stay)."""
    pw = _text(data[m.start("pw"):m.end("pw")]).rstrip(".,;:!?)")
    if len(pw) < 4 or pw.isalpha() or pw.startswith("!") or _non_value(pw) or not _HAS_ALPHA.search(pw):
        return None
    if not _HAS_DIGIT.search(pw) or _CODE_REF.fullmatch(pw) or _CALL_START.match(pw):
        return None
    return m.start("pw"), m.start("pw") + len(pw.encode()), "password", marker("password").encode()


def _pgpass(m: re.Match[bytes], data: bytes) -> Edit | None:
    """``host:port:database:user:password`` lines of ~/.pgpass."""
    pw = _text(m["pw"])
    return None if pw.isdigit() or _non_value(pw) else _edit(m, "password", "pw")


def _sas(m: re.Match[bytes], data: bytes) -> Edit | None:
    """Azure shared access signature ``sig=`` (URL-escaped base64 of 32 bytes)."""
    if not _at_word_start(data, m.start()) or b"=" in data[m.start("val"):m.end("val")].rstrip(b"="):
        return None
    return _edit(m, "azure_sas", "val")


# ---------------------------------------------------------------- rules, in order


def _rule(pattern: bytes, decide: Decide, *triggers: bytes, min_run: int = 0, nocase: bool = False,
          heads: tuple[bytes, ...] | None = None) -> _Rule:
    compact = 16 <= min_run <= 100 and not nocase  # provider tokens: ≥ min_run token characters
    if heads is None:  # a token whose pattern starts with two literal letters starts a word with them
        heads = (pattern[:2],) if compact and re.match(rb"[A-Za-z0-9]{2}", pattern) else ()
    return _Rule(_Pattern(pattern, re.S | re.M), decide, triggers, min_run, nocase, compact, heads)


_VALUE = (rb"""(?:[rbfu]{0,2}(?P<q>\\?["'`])(?P<qval>[^"'`\r\n\\\x80-\xff]{1,512}+)(?P=q)"""
          rb"""|(?P<bval>[^\s"'`,;{}\[\]<>&|\\\x80-\xff]{1,512}+)(?![\[{]))""")
# Found at a secret-ish word inside the key; _assignment() looks back for the key's start. The
# separator: `=`, `:`, `:=`, `=>`, an annotation (`TOKEN: str = `), a subscript's end
# (`environ['KEY'] = `), a call's comma (`set("secret", "…")`) or blanks (CLI flags).
_ASSIGNMENT = (rb"""(?P<rest>[\w.-]{0,60}+)(?P<sep>\\?["'`]?\]?[ \t]*"""
               rb"""(?::[ \t]*[A-Za-z_][\w.\[\]|]{0,30}[ \t]*=(?![=>])|:=|=>|[:=])[ \t]*"""
               rb"""|["'`][ \t]*,[ \t]*(?=["'`])|[ \t]+)""" + _VALUE)
_PEM_GAP = rb"(?:\s|\\++[nr])*+"  # newlines, also escaped once or twice (JSON in JSON)
_PEM = (rb"-----BEGIN (?P<label>[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?)-----"
        # body: base64 lines and "Proc-Type: …" headers; END may be missing from a truncated paste
        rb"(?P<body>(?:" + _PEM_GAP + rb"(?:[A-Za-z0-9+/=]{16,}+|[A-Z][A-Za-z-]*+: [^\n\\]*+))*+)"
        rb"(?P<end>" + _PEM_GAP + rb"[A-Za-z0-9+/=]{0,16}+" + _PEM_GAP + rb"-----END (?P=label)-----)?")

_RULES: tuple[_Rule, ...] = (
    _rule(rb"<private>(?P<body>(?:[^<]++|<(?!private>|/private))*+)</private\s*>", _private,
          b"</private", nocase=True),
    _rule(_PEM, lambda m, data: _edit(m, "private_key") if m["body"] or m["end"] else None, b"PRIVATE KEY"),
    _rule(rb"data:(?P<mime>[\w.+-]++/[\w.+-]++)?(?:;[\w.+-]++=[\w.+%-]++)*+;base64,"
          rb"(?P<b64>[A-Za-z0-9+/]{20,}=*)", _data_url, b";base64,"),
    # (?<!…) after the literal: try only where a run starts, so "eyJeyJ…" stays linear
    _rule(rb"eyJ(?<![\w-]eyJ)[\w-]{5,}+\.eyJ[\w-]{5,}+\.[\w-]*+", _whole("jwt"), b"eyJ"),
    _rule(rb"sk-(?:(?P<ant>ant-)|proj-|svcacct-|admin-|None-)?[\w-]{20,}", _sk_key, b"sk-", min_run=20),
    _rule(rb"gh[pousr]_[A-Za-z0-9]{36,251}", _token("github_token"), b"gh", min_run=20),
    _rule(rb"github_pat_\w{50,}", _token("github_token"), b"github_pat_", min_run=20),
    _rule(rb"gl(?:pat|dt|rt|ptt)-[\w-]{20,}", _token("gitlab_token"), b"gl", min_run=20),
    _rule(rb"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<path>[\w/-]{10,})",
          lambda m, data: _edit(m, "slack_webhook", "path"), b"hooks.slack.com", min_run=20),
    _rule(rb"xox[abposr]-[A-Za-z0-9-]{10,}", _token("slack_token", _random_body), b"xox", min_run=20),
    _rule(rb"xapp-[A-Za-z0-9-]{10,}", _token("slack_token", _random_body), b"xapp-", min_run=20),
    _rule(rb"A(?:KIA|SIA)[A-Z0-9]{16}(?![A-Za-z0-9])", _token("aws_access_key_id", lambda t: "EXAMPLE" not in t), b"AKIA", b"ASIA",
          min_run=20, heads=(b"AK", b"AS")),
    _rule(rb"AIza[\w-]{35}", _token("google_api_key"), b"AIza", min_run=20),
    _rule(rb"k_(?<=[sr]k_)(?:live|test)_[A-Za-z0-9]{16,}", _stripe_key, b"k_", min_run=20, heads=(b"sk", b"rk")),
    _rule(rb"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", _token("npm_token"), b"npm_", min_run=20),
    _rule(rb"hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9])", _token("huggingface_token", _mixed_case), b"hf_",
          min_run=20),
    _rule(rb"""://(?P<user>[^\s:/?#@\[\]"'<>]*+):(?P<pw>[^\s/?@"'<>]++)@(?=[\w\[.-])""", _url_password,
          b"://"),
    _rule(rb"(?P<scheme>b(?:earer|asic))[ \t]+(?P<val>[\w.~+/-]{8,}=*)", _auth_header, b"bearer", b"basic",
          nocase=True),
    _rule(rb"(?P<scheme>token)[ \t]+(?P<val>[\w.~+/-]{16,}=*)", _auth_header, b"token", nocase=True),
    _rule(rb"""-(?:u|-user)[ \t=]+["']?[^\s:"'$]++:(?P<pw>[^\s"']++)""", _cli_password, b"-u"),
    _rule(rb"""-p(?P<pw>[^\s"']++)""", _mysql_password, b"mysql"),
    *(_rule(pattern, _shape(kind), *triggers, min_run=16) for kind, pattern, triggers in SHAPES),
    _rule(rb"(?<![a-z0-9/+=])[a-z0-9/+]{40}(?![a-z0-9/+=])", _aws_secret,
          b"[redacted:aws_access_key_id]", b"aws", b"secret access key", min_run=40, nocase=True),
    _rule(rb"\.(?<=[A-Za-z\d]{23}\.)[\w-]{6}\.[\w-]{27,38}(?![\w.-])", _discord, b".", min_run=58, heads=()),
    _rule(rb"discord(?:app)?\.com/api/webhooks/\d+/(?P<path>[\w-]{60,}+)",
          lambda m, data: _edit(m, "webhook", "path"), b"/api/webhooks/", min_run=20, heads=()),
    _rule(rb"/IncomingWebhook/(?P<path>[\w-]{30,}+)", lambda m, data: _edit(m, "webhook", "path"),
          b"/IncomingWebhook/", min_run=20, heads=()),
    _rule(rb"sig=(?P<val>[\w%+/-]{16,}+=*)", _sas, b"sig="),
    _rule(rb"(?P<scheme>ssws)[ \t]+(?P<val>[\w-]{20,}+)", _group("okta_token", "val"), b"ssws", nocase=True),
    _rule(rb"""cookie["']?(?:[ \t]*[:=][ \t]*["']?|[ \t]+["'])(?P<val>[^\r\n"']+)""", _cookie, b"cookie",
          nocase=True),
    _rule(rb"""-b[ \t]+["'](?P<val>[^\r\n"']+)""", _cookie, b"-b "),
    _rule(rb"""value["']?[ \t]*[:=][ \t]*(?:["'](?P<qv>[^"'\r\n]{1,512}+)["']|(?P<bv>[^\s"',}]{1,512}+))""",
          _name_value, b"value", nocase=True),
    _rule(rb"machine[ \t]+\S+(?:\s+(?:login|account|port)[ \t]+\S+)*+\s+password[ \t]+(?P<pw>[^\s]+)",
          _group("password", "pw"), b"machine"),
    _rule(rb"^[\w.*-]{1,253}:(?:\d{1,5}|\*):[\w.*-]{1,63}:[\w.*@-]{1,63}:(?P<pw>[^\s:]{1,200})[ \t]*\r?$",
          _pgpass, b":*:", b":5432:", b"pgpass"),
    _rule(rb"<(?P<tag>[\w:-]{0,30}(?:password|passwd|secret|token|apikey|api_key)[\w-]{0,20})>"
          rb"(?P<val>[^<\r\n]{1,300})</(?P=tag)>", _xml_element, b"</", nocase=True),
    _rule(rb"""sshpass[ \t]+-p[ \t]*["']?(?P<pw>[^\s"']+)""", _group("password", "pw"), b"sshpass"),
    # the lookaheads skip common words whose keys never name a secret (passed, tokens, keyboard, author)
    *(_rule(word + skip + _ASSIGNMENT, _assignment, word, nocase=True) for word, skip in (
        (b"pass", rb"(?!ed|es\b|ing|ive|age|through)"), (b"pwd", b""), (b"secret", b""),
        (b"token", rb"(?!iz|s\b|_count|_type)"),
        (b"key", rb"(?!board|word|s\b|stroke|frame|event|code|down|up\b|press|map|err|ed\b)"),
        (b"auth", rb"(?!or\b|ors\b|ored|oring|ority|entic)"), (b"cred", b""))),
    _rule(rb"(?:password|passphrase|passwd)(?:[ \t]+(?:is|was))?[ \t]*:?[ \t]+[\"'`]?(?P<pw>[^\s\"'`<>]{4,64})",
          _prose_password, b"pass", nocase=True),
    _rule(rb"""AC[0-9a-f]{32}["']?[ \t]*,[ \t]*["']?(?P<tok>[0-9a-f]{32})(?![0-9a-zA-Z])""",
          lambda m, data: _edit(m, "twilio_token", "tok"), b"AC"),
    _rule(rb"(?<![\w+/-])[\w+/-]{200,}+=*", _base64_blob, min_run=200),
)

KINDS: tuple[str, ...] = (
    "private", "private_key", "data_url", "jwt", "anthropic_key", "openai_key", "github_token",
    "gitlab_token", "slack_webhook", "slack_token", "aws_access_key_id", "google_api_key", "stripe_key",
    "npm_token", "huggingface_token", "url_password", "bearer_token", "basic_auth", "password", "secret",
    "aws_secret_key", "base64", "webhook", "azure_sas", "okta_token", "cookie", "discord_token", "twilio_token",
    *dict.fromkeys(kind for kind, _, _ in SHAPES if kind not in ("gitlab_token", "huggingface_token",
                                                                 "npm_token", "stripe_key", "slack_token", "openai_key")),
)


def _apply(rule: _Rule, data: bytes, haystack: bytes, kinds: dict[str, int]) -> bytes:
    """Run one rule; return ``data`` itself (the same object) if nothing was replaced."""
    out, pos = [], 0
    for m in rule.pattern.finditer(haystack):
        edit = rule.decide(m, data)
        if edit is None or edit[0] < pos:
            continue
        start, end, kind, new = edit
        out += [data[pos:start], new]
        pos = end
        kinds[kind] = kinds.get(kind, 0) + 1
    if not out:
        return data
    out.append(data[pos:])
    return b"".join(out)


_RUN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
_RUN_MASK = bytes(ord("a") if c in _RUN_CHARS else ord(" ") for c in range(256))
_MIN_RUNS = sorted({r.min_run for r in _RULES if not r.compact} - {0})  # compact: see _long_runs


def _views(data: bytes) -> tuple[bytes, dict[int, bool]]:
    """The lower-cased text, and which run lengths (of base64/token characters) it contains."""
    masked = data.translate(_RUN_MASK)
    return data.lower(), {0: True} | {n: b"a" * n in masked for n in _MIN_RUNS}


# Consecutive rules that look for provider tokens form one stage, skipped at once on short text.
# Each rule as a plain tuple, because the loop below runs ~85 times per call.
_Step = tuple[_Rule, tuple[bytes, ...], int, bool]


@dataclass(frozen=True, slots=True)
class _Stage:
    compact: bool
    steps: tuple[_Step, ...]
    by_head: dict[bytes, tuple[int, ...]]  # compact stages: word start → the steps it can begin
    always: frozenset[int]  # steps without a word-start gate


def _stage(compact: bool, rules: list[_Rule]) -> _Stage:
    by_head: dict[bytes, list[int]] = {}
    for i, r in enumerate(rules):
        for h in r.heads:
            by_head.setdefault(h, []).append(i)
    return _Stage(compact, tuple((r, r.triggers, r.min_run, r.nocase) for r in rules),
                  {h: tuple(ix) for h, ix in by_head.items()}, frozenset(i for i, r in enumerate(rules) if not r.heads))


_STAGES: tuple[_Stage, ...] = tuple(
    _stage(compact, list(group)) for compact, group in itertools.groupby(_RULES, key=lambda r: r.compact))

_TOKEN_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:~+/=-"
_LONG_RUN = re.compile(b"[" + re.escape(_TOKEN_BYTES) + b"]{16,}")  # maximal runs, as translate + split gave


def _long_runs(data: bytes) -> tuple[bytes, int]:
    """The runs of 16+ token characters, joined by blanks: every provider token lies inside one,
    so its prefix is searched in these few hundred bytes instead of the whole text (one regex
    pass at C speed). Also the longest run's length."""
    runs = _LONG_RUN.findall(data)
    return b" ".join(runs), max(map(len, runs), default=0)


_WORD_MASK = bytes(c if chr(c).isascii() and chr(c).isalnum() else 32 for c in range(256))


def _word_heads(long_runs: bytes) -> frozenset[bytes]:
    """The first two bytes of every word in the long runs: a set lookup rules out most providers
    without a substring search each."""
    return frozenset([w[:2] for w in long_runs.translate(_WORD_MASK).split()])



def _has_any(haystack: bytes, triggers: tuple[bytes, ...]) -> bool:
    for t in triggers:
        if t in haystack:
            return True
    return not triggers


def redact(text: str) -> RedactResult:
    """Replace every secret in ``text`` with a marker; report how many of each kind."""
    kinds: dict[str, int] = {}
    if not text:
        return RedactResult(text, 0, kinds)
    data = text.encode("utf-8", "surrogatepass")
    low, runs = _views(data)
    long_runs: bytes | None = None
    longest = 0
    heads: frozenset[bytes] | None = None
    for stage in _STAGES:
        compact, steps = stage.compact, stage.steps
        if compact:
            if long_runs is None:
                long_runs, longest = _long_runs(data)
            if not long_runs:  # no run of 16 token characters: no provider token at all
                continue
            if heads is None:
                heads = _word_heads(long_runs)
            picked = set(stage.always)
            for h in heads & stage.by_head.keys():
                picked.update(stage.by_head[h])
            steps = tuple(steps[i] for i in sorted(picked))
        for rule, triggers, min_run, nocase in steps:
            if min_run and (min_run > longest if compact else not runs[min_run]):
                continue
            haystack = low if nocase else data
            if triggers:
                gate = long_runs if compact else haystack
                for t in triggers:  # most rules are skipped by one substring search
                    if t in gate:  # type: ignore[operator]
                        break
                else:
                    continue
            new = _apply(rule, data, haystack, kinds)
            if new is not data:
                data = new
                low, runs = _views(data)
                long_runs, longest = _long_runs(data) if compact else (None, 0)  # the heads only lose words
    return RedactResult(data.decode("utf-8", "surrogatepass"), sum(kinds.values()), kinds)


def redact_text(text: str) -> str:
    """Just the redacted text."""
    return redact(text).text


def redact_value(value: Any, seen: frozenset[str] = frozenset()) -> Any:
    """A copy of a JSON value with every string (keys too) redacted, except those in ``seen`` (read back
    from where they were stored redacted already)."""
    if isinstance(value, str):
        return value if value in seen else redact_text(value)
    if isinstance(value, dict):
        return {redact_value(k, seen): redact_value(v, seen) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, seen) for v in value]
    return value
