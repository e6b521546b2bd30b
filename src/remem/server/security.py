"""The daemon's gate, as one ASGI middleware: Host check, token auth, body limits, headers, access log.

- Every route needs a token except ``/health``, the login page, the viewer's static code and
  the login call itself. The token comes as ``Authorization: Bearer …`` or as the viewer's
  ``remem_session`` cookie (HttpOnly, SameSite=Strict, derived from the token by HMAC so the
  token itself never sits in the browser).
- The home's token acts as the machine's owner (every route, every owner). A user's token (team use,
  ``remem.team``) is looked up by its hash on every request, so a removed user is refused at once;
  it reaches only the routes of ``USER_ROUTES`` (a new route is the home's until listed there) and
  acts as that user: the request carries its ``Principal`` in ``scope["remem.principal"]``.
- A cookie-authenticated write must also carry ``X-Remem-Request`` (a header other sites cannot
  send without a CORS preflight, which this server never grants) and a same-origin ``Origin``.
- On loopback the ``Host`` header must name a loopback host: a DNS-rebinding page cannot talk
  to the daemon even before auth.
- Bodies over the route's limit get 413 before they are read.
- No CORS headers are ever sent.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from ..team import Principal, session_of

log = logging.getLogger("remem.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "remem_session"
COOKIE_MAX_AGE = 30 * 24 * 3600  # a month: re-login is rare, and the cookie dies with the token anyway
CSRF_HEADER = "x-remem-request"
DEFAULT_BODY_LIMIT = 8 * 1024 * 1024       # a batch of turns (each ≤ 2 MiB) with room to spare
BODY_LIMITS = {"/api/v1/import": 512 * 1024 * 1024}  # JSONL imports are streamed to disk
PUBLIC = ("/health", "/login", "/favicon.ico", "/api/v1/auth/login", "/api/v1/auth/logout")
PUBLIC_PREFIXES = ("/static/",)
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
PRINCIPAL = "remem.principal"  # the ASGI scope key routes read who the request acts as (deps.principal)
HOME = Principal()
# what a user's token may reach (method, path under /api/v1): its own and its teams' memories,
# recall, learned memories and sharing; the daemon's controls, settings, sources, jobs, logs, the
# whole-database export and "clear everything" stay the home's
USER_ROUTES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (m, re.compile(f"/api/v1/{p}")) for m, p in (
        ("GET", "me"), ("GET", "owners"), ("GET", "stats"), ("GET", "export/jsonl"), ("POST", "import"),
        ("GET", "memories"), ("POST", "memories"), ("GET", "memories/search"), ("POST", "memories/search"),
        ("GET", "memories/[^/]+"), ("DELETE", "memories/[^/]+"), ("POST", "turns"),
        ("GET", "sessions"), ("GET", "sessions/[^/]+/timeline"),
        ("POST", "recall/turn-start"), ("POST", "recall/session-start"), ("POST", "recall/repair"),
        ("POST", "share"), ("POST", "sync/push"), ("GET", "sync/turns"), ("GET", "sync/learned"), ("POST", "sync/learned"),
        ("POST", "sync/forget"),
        ("GET", "learned"), ("POST", "learned/learn"), ("GET", "learned/[^/]+"), ("GET", "learned/[^/]+/history"),
        ("POST", "learned/[^/]+/(edit|feedback|approve|reject|archive|lock|unlock|forget|delete|restore)"),
        ("POST", "learned/events/[0-9]+/rollback"),
        ("GET", "packets"), ("POST", "packets/[0-9]+/feedback"),
    ))
USER_PAGES = ("/",)  # the viewer's page (its code under /static/ is public)
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"content-security-policy",
     b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; "
     b"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
]


class TooLarge(HTTPException):
    """Raised while a body streams in past its limit; an HTTPException so no handler turns it into 400."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body too large (limit {limit} bytes)")
        self.limit = limit


def session_value(token: str) -> str:
    """The viewer cookie for ``token``: stable across restarts, useless once the token changes
    (the same derivation for a user's token, whose cookie the store knows by its hash)."""
    return session_of(token)


def user_may(method: str, path: str) -> bool:
    """Whether a user's token may call this route (``USER_ROUTES``, and the viewer's page; HEAD as GET)."""
    method = "GET" if method == "HEAD" else method
    if path in USER_PAGES:
        return method == "GET"
    return any(m == method and rx.fullmatch(path) for m, rx in USER_ROUTES)


def is_public(path: str) -> bool:
    return path in PUBLIC or path.startswith(PUBLIC_PREFIXES)


def body_limit(path: str) -> int:
    return BODY_LIMITS.get(path, DEFAULT_BODY_LIMIT)


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope.get("headers") or []:
        out[k.decode("latin-1").lower()] = v.decode("latin-1")
    return out


def _cookies(header: str) -> dict[str, str]:
    out = {}
    for part in header.split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def host_name(host_header: str) -> str:
    h = host_header.strip().lower()
    if h.startswith("["):
        return h.split("]", 1)[0] + "]"
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


Users = Callable[[str, str], "Principal | None"]  # (bearer token, cookie) → its user, or None


class Guard:
    def __init__(self, app: ASGIApp, *, token: str, allowed_hosts: frozenset[str] | None = LOOPBACK_HOSTS,
                 users: Users | None = None) -> None:
        self.app = app
        self.token = token
        self.session = session_value(token)
        self.allowed_hosts = allowed_hosts
        self.users = users

    def check(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """The home token's part of the gate: None when the request may pass as the home, else
        (status, message); a token or cookie that is not the home's comes back as 401 here and
        ``authorize`` then asks the store whether it is a user's."""
        if self.allowed_hosts is not None and host_name(headers.get("host", "")) not in self.allowed_hosts:
            return 421, "unexpected Host header"
        path = scope["path"]
        if is_public(path):
            return None
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            if hmac.compare_digest(auth[7:].strip().encode(), self.token.encode()):
                return None
            return 401, "invalid token"
        cookie = _cookies(headers.get("cookie", "")).get(COOKIE, "")
        if cookie and hmac.compare_digest(cookie.encode(), self.session.encode()):
            return cookie_write_check(scope["method"], headers)
        return 401, "missing or invalid token"

    async def authorize(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """The whole gate: the home token, else a user's token or cookie (looked up by hash in the
        store, off the event loop), limited to ``USER_ROUTES``. Sets ``scope[PRINCIPAL]``."""
        denied = self.check(scope, headers)
        if denied is None:
            if not is_public(scope["path"]):
                scope[PRINCIPAL] = HOME
            return None
        if denied[0] != 401 or self.users is None:
            return denied
        auth = headers.get("authorization", "")
        bearer = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
        cookie = "" if bearer else _cookies(headers.get("cookie", "")).get(COOKIE, "")
        if not bearer and not cookie:
            return denied
        who = await run_in_threadpool(self.users, bearer, cookie)
        if who is None:
            return denied
        if cookie:
            refused = cookie_write_check(scope["method"], headers)
            if refused is not None:
                return refused
        if not user_may(scope["method"], scope["path"]):
            return 403, f"user {who.user} may not use {scope['method']} {scope['path']} (the home's token may)"
        scope[PRINCIPAL] = who
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        headers = _headers(scope)
        path = scope["path"]
        status_box = [0]
        is_api = path.startswith("/api/")

        async def send_wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
                hs = [h for h in message.get("headers", []) if not h[0].lower().startswith(b"access-control-")]
                hs.extend(SECURITY_HEADERS)
                if is_api:
                    hs.append((b"cache-control", b"no-store"))
                message["headers"] = hs
            await send(message)

        try:
            denied = await self.authorize(scope, headers)
            if denied is not None:
                status, msg = denied
                wants_page = (scope["method"] == "GET" and not is_api and status == 401
                              and "text/html" in headers.get("accept", ""))
                if wants_page or (path == "/" and status == 401):
                    await _redirect(send_wrapped, "/login")
                else:
                    await _json(send_wrapped, status, {"detail": msg},
                                [(b"www-authenticate", b"Bearer")] if status == 401 else [])
                return
            limit = body_limit(path)
            declared = headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                await _json(send_wrapped, 413, {"detail": f"request body too large (limit {limit} bytes)"})
                return
            seen = [0]

            async def receive_limited() -> Message:
                message = await receive()
                if message["type"] == "http.request":
                    seen[0] += len(message.get("body", b""))
                    if seen[0] > limit:
                        raise TooLarge(limit)
                return message

            await self.app(scope, receive_limited, send_wrapped)
        finally:
            ms = (time.perf_counter() - t0) * 1000
            level = logging.DEBUG if path == "/health" or path.startswith("/static/") else logging.INFO
            log.log(level, "%s %s %s %.1fms", scope["method"], path, status_box[0], ms)


def cookie_write_check(method: str, headers: dict[str, str]) -> tuple[int, str] | None:
    """A cookie-authenticated write needs the CSRF header and, when sent, a same-origin Origin."""
    if method in ("GET", "HEAD", "OPTIONS"):
        return None
    if CSRF_HEADER not in headers:
        return 403, f"cookie-authenticated writes need the {CSRF_HEADER} header"
    origin = headers.get("origin")
    if origin and origin.split("://", 1)[-1].lower() != headers.get("host", "").lower():
        return 403, "cross-origin request refused"
    return None


async def _json(send: Send, status: int, body: dict[str, Any], extra: list[tuple[bytes, bytes]] | None = None) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            *(extra or [])]})
    await send({"type": "http.response.body", "body": data})


async def _redirect(send: Send, location: str) -> None:
    await send({"type": "http.response.start", "status": 303,
                "headers": [(b"location", location.encode()), (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})
