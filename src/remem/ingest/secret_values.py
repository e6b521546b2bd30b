"""Value and key heuristics for redact.py: does a value look like a secret, a placeholder or code,
and does a key name announce a secret. Pure functions of plain values; stdlib only (the hook
process imports this)."""

from __future__ import annotations

import functools
import re

_HAS_DIGIT = re.compile(r"\d")
_HAS_ALPHA = re.compile(r"[A-Za-z]")
_HAS_SYMBOL = re.compile(r"[^A-Za-z0-9_.:/-]")  # beyond identifier and path punctuation
_HEX = re.compile(r"[0-9a-fA-F]+")
_TEMPLATE = re.compile(r"\{[^}]*\}|%\(\w*\)[sd]|%[sd](?![A-Za-z0-9])")  # {name}, f"{x}", %s, %(name)s
_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_CODE_REF = re.compile(r"[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)+")  # module.attr.Name
# Identifiers, dotted attributes, paths, versions: word-like segments joined by _ . / - :
_SEGMENT = r"(?:(?:[A-Z]?+[a-z]++|[A-Z]++(?![a-z]))++\d{0,6}+|\d++)"  # word, camelCase, ABC, 123
_WORDY = re.compile(rf"[~._]{{0,2}}[/\\]?{_SEGMENT}(?:[_./\\:-]++{_SEGMENT})*+[_./-]?")
_CALL = re.compile(r"[A-Za-z_][\w.:]*\(.*\)")
_PLACEHOLDER_START = ("$", "{", "<", "%", "[", "*", "(", "--", "@")
_PLACEHOLDER_WORDS = frozenset({"password", "passwd", "pass", "pwd", "secret", "token", "changeme", "xxx"})
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _looks_secret(value: str, min_len: int, password: bool = False) -> bool:
    """Long enough, mixes letters with digits (or symbols, for passwords), and is not a
    placeholder, identifier, path, URL or call expression."""
    if len(value) < min_len or value.startswith(_PLACEHOLDER_START) or "://" in value:
        return False
    if len(set(value)) < 5 or not _HAS_ALPHA.search(value) or _TEMPLATE.search(value):
        return False
    if len(value) < 32 and _HEX.fullmatch(value):  # short hex: an id or digest, not a key
        return False
    if not (_HAS_DIGIT.search(value) or (password and _HAS_SYMBOL.search(value))):
        return False
    return not (_WORDY.fullmatch(value) or _CALL.fullmatch(value))


_KEY_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "passphrase", "passcode", "storepass", "keypass"})
_SECRET_WORDS = frozenset({
    "secret", "secrets", "token", "apikey", "auth", "authorization", "credential", "credentials",
    "accesskey", "secretkey", "privatekey", "clientsecret", "accesstoken", "authtoken", "pat",
})
_KEY_QUALIFIERS = frozenset({
    "api", "access", "secret", "private", "client", "signing", "encryption", "master", "session",
    "auth", "license", "app", "service", "account", "deploy", "admin", "webhook", "consumer", "storage",
})
# A last word saying the value describes the secret rather than being it.
_NOT_SECRET_LAST = frozenset({
    "count", "counts", "len", "length", "name", "names", "id", "ids", "type", "file", "path", "dir",
    "url", "uri", "env", "var", "field", "size", "limit", "max", "min", "prefix", "ttl", "format",
    "header", "endpoint", "expiry", "expires", "at", "mode", "enabled", "required", "hint", "arn",
    "state", "status", "flags", "ldflags", "cflags", "policy", "strength", "rule", "rules", "option",
    "options", "config", "manager", "store", "prompt", "label", "input", "hash", "hashed", "digest",
    "salt", "changed", "validator", "hasher", "provider", "pattern", "stdin",
    "regex", "re", "info", "kind", "class", "cls", "error", "errors", "message", "msg", "help", "doc",
    "widget", "form", "schema", "test", "tests", "spec", "handler", "callback", "fn", "func", "method",
})


@functools.lru_cache(maxsize=4096)
def _key_kind(name: str) -> str | None:
    """The kind of secret a key name like ``DB_PASSWORD``, ``clientSecret`` or ``--api-key``
    announces: 'password', 'secret', 'aws_secret_key', or None."""
    words = [w.lower() for w in _KEY_WORD.findall(name)]
    if not words or words[-1] in _NOT_SECRET_LAST or "public" in words:
        return None
    if ("aws" in words and "secret" in words) or "secretaccesskey" in "".join(words):
        return "aws_secret_key"
    if words[-1] == "pass" or any(w in _PASSWORD_WORDS or w.endswith(("password", "passwd")) for w in words):
        return "password"
    for prev, w in zip(["", *words], words, strict=False):
        if w in _SECRET_WORDS or w.endswith(("secret", "token", "apikey")):
            return "secret"
        if w == "key" and prev in _KEY_QUALIFIERS:
            return "secret"
    return None


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _at_word_start(data: bytes, i: int) -> bool:
    return i == 0 or data[i - 1] not in _WORD_BYTES


def _b64_size(payload: bytes) -> int:
    """Decoded size of a base64 payload."""
    padding = len(payload) - len(payload.rstrip(b"="))
    return len(payload) * 3 // 4 - padding


def _human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def _random_body(token: str) -> bool:
    body = token.split("-", 1)[1]
    return bool(_HAS_DIGIT.search(body)) and not _WORDY.fullmatch(body)


def _mixed_case(token: str) -> bool:
    return token != token.lower() and token != token.upper()


_KEY_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _key_start(data: bytes, i: int) -> int:
    """Where the key around a secret-ish word starts (at most 60 bytes back)."""
    stop = max(0, i - 60)
    while i > stop and data[i - 1] in _KEY_BYTES:
        i -= 1
    return i


_INI_SECTION = re.compile(rb"^\[[A-Za-z][\w .:\"-]*\][ \t]*\r?$", re.M)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_CALL_START = re.compile(r"[A-Za-z_][\w.:]*\(")
_NON_VALUES = frozenset({
    "none", "null", "nil", "true", "false", "undefined", "string", "str", "bytes", "int", "any", "text",
    "optional", "required", "secret", "secrets", "password", "passwd", "pass", "pwd", "token", "changeme",
    "hidden", "redacted", "empty", "example", "placeholder", "secretstr", "unset", "default", "mask", "masked",
    "yes", "no", "on", "off", "auto", "disabled", "enabled", "prompt", "stdin", "env", "file", "ask",
})
_PLACEHOLDER_PARTS = ("your", "example", "placeholder", "changeme", "xxxx", "...", "…", "redacted", "dummy")
_WEAK_SECRET_WORDS = frozenset({"auth", "authorization", "credential", "credentials"})


def _non_value(value: str) -> bool:
    """A placeholder or a value that only describes one: ``${DB_PASSWORD}``, ``<password>``,
    ``********``, ``changeme``, ``your-api-key``, ``str``, ``None``."""
    low = value.lower()
    return (value.startswith(_PLACEHOLDER_START) or low in _NON_VALUES or len(set(value)) == 1
            or any(p in low for p in _PLACEHOLDER_PARTS) or bool(_TEMPLATE.search(value))
            or (value.startswith(("/", "~/", "./", "../")) and bool(_WORDY.fullmatch(value))))


def _code_value(value: str, data: bytes, end: int, sep: bytes, key_start: int, line_head: bool) -> bool:
    """A bare value that is code rather than a literal: ``module.attr``, a call, a variable passed
    as ``f(password=pw)`` or assigned as ``password = user_input`` (outside an INI section)."""
    if _CODE_REF.fullmatch(value) or _CALL.fullmatch(value):
        return True
    if _CALL_START.match(value) and (value.endswith("(") or data[end:end + 1] in (b",", b")", b"'", b'"')):
        return True  # getpass.getpass('Password: '), hash_fn(salt, pw)
    if not (_IDENT.fullmatch(value) and _WORDY.fullmatch(value)):  # a variable's name, not random
        return False
    if _annotation(data, end):  # f(password=pw), {password: pw}, key: Type,
        return True
    spaced = sep.startswith((b" ", b"\t")) and b"=" in sep
    return spaced and not (line_head and _INI_SECTION.search(data, max(0, key_start - 2000), key_start))


def _trim(data: bytes, start: int, end: int) -> int:
    """End a bare value before a sentence's full stop or colon and before unbalanced ``)``."""
    value = data[start:end].rstrip(b".:")
    while value.endswith(b")") and value.count(b")") > value.count(b"("):
        value = value[:-1]
    return start + len(value)


def _min_len(kind: str, key: str) -> int:
    """How long a bare-enough value must be: any password (issue 13), 8 for a named secret or
    token, 16 where the key only says ``auth`` or ``credentials``."""
    if kind == "password":
        return 1
    words = {w.lower() for w in _KEY_WORD.findall(key)}
    return 16 if words <= _WEAK_SECRET_WORDS | {"x", "the", "my", "header"} else 8


def _annotation(data: bytes, end: int) -> bool:
    """A bare value followed by , ) | = ] } — a type annotation or an object literal's variable."""
    rest = data[end:end + 3].lstrip(b" ")
    return rest[:1] in (b",", b")", b"|", b"=", b"]", b"}")
