"""The FastAPI application: API routers under ``/api/v1``, the viewer, errors as one clear JSON line."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from ..config import ConfigError
from ..errors import RememError
from ..ingest.normalize import InputError
from ..scope import ScopeError
from ..store import ENGINE_ERRORS, StoreError
from ..team import OwnerRefused, Principal, principal_of
from . import API_PREFIX, optional, security
from .jobs import QueueFull
from .routes import data, integrations, learned, memories, sources, system, teamsync
from .state import DaemonState

log = logging.getLogger("remem.http")
VIEWER = Path(__file__).with_name("viewer")


def create_app(state: DaemonState) -> FastAPI:
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("remem")
    except PackageNotFoundError:
        ver = "0"
    app = FastAPI(title="remem", version=ver, summary="One long-term memory for all your AI coding agents",
                  openapi_url=f"{API_PREFIX}/openapi.json", docs_url=None, redoc_url=None)
    app.state.daemon = state
    for mod in (memories, sources, integrations, data, system, learned, teamsync):
        app.include_router(mod.router, prefix=API_PREFIX)

    @app.get("/health", include_in_schema=False)
    def health() -> dict[str, Any]:
        return state.health()

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(VIEWER / "index.html", headers={"cache-control": "no-store"})

    login_html = _login_html(state.home / "token")

    @app.get("/login", include_in_schema=False)
    def login_page() -> HTMLResponse:
        return HTMLResponse(login_html, headers={"cache-control": "no-store"})

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        return FileResponse(VIEWER / "favicon.svg", media_type="image/svg+xml")

    app.mount("/static", StaticFiles(directory=VIEWER), name="static")
    _errors(app)
    allowed = security.LOOPBACK_HOSTS | {state.host.lower()} if _loopback(state.host) else None
    app.add_middleware(security.Guard, token=state.token, allowed_hosts=allowed,  # type: ignore[arg-type]
                       users=lambda token, cookie: _user(state, token, cookie))
    return app


def _user(state: DaemonState, token: str, cookie: str) -> Principal | None:
    """The user of a token that is not the home's (team use), looked up in the store on every request:
    a removed user's token stops working at once, also when another process removed it."""
    if state.mem is None:
        return None
    return principal_of(state.mem.store, token=token, cookie=cookie)


def _login_html(token_path: Path) -> str:
    """The login page, told where this home's token is (``~/…`` under the user's home) so its hint
    names the real file, not ``~/.remem/token`` when ``REMEM_HOME`` is elsewhere."""
    import html
    import shlex

    path = str(token_path)
    try:
        rel = token_path.relative_to(Path.home())
        path = "~/" + shlex.quote(str(rel))
    except ValueError:
        path = shlex.quote(path)
    meta = f'<meta name="remem-token-path" content="{html.escape(path, quote=True)}">'
    page = (VIEWER / "login.html").read_text(encoding="utf-8")
    return page.replace("</head>", f"  {meta}\n</head>", 1)


def _loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def _errors(app: FastAPI) -> None:
    def reply(status: int, msg: str) -> JSONResponse:
        return JSONResponse({"detail": msg.splitlines()[0] if msg else "error"}, status_code=status)

    async def bad_request(_r: Request, e: Exception) -> JSONResponse:
        return reply(400, str(e) or type(e).__name__)

    async def unavailable(_r: Request, e: Exception) -> JSONResponse:
        return reply(503, str(e))

    async def store_error(_r: Request, e: Exception) -> JSONResponse:
        log.error("storage error: %s", e)
        return reply(503, str(e))

    async def sqlite_error(_r: Request, e: Exception) -> JSONResponse:
        log.error("database error: %s", e)
        return reply(503, f"database error: {e}")

    async def refused(_r: Request, e: Exception) -> JSONResponse:
        return reply(403, str(e))

    async def busy(_r: Request, e: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, status_code=429, headers={"retry-after": "10"})

    async def not_found(_r: Request, e: Exception) -> JSONResponse:
        return reply(404, str(e).strip("'\""))

    async def out_of_range(_r: Request, e: Exception) -> JSONResponse:
        # SQLite holds 64-bit integers; a bigger one from a request is the client's mistake
        return reply(400, f"number out of range ({e})")

    async def too_deep(_r: Request, _e: Exception) -> JSONResponse:
        return reply(400, "input is nested too deeply")

    # RememError: any failure remem raises on purpose, one line for the client (the more specific
    # classes below answer with their own status); every other exception is a bug: a 500 and its traceback
    for exc in (RememError, InputError, ConfigError, ScopeError, ValueError):
        app.add_exception_handler(exc, bad_request)
    app.add_exception_handler(OwnerRefused, refused)  # a user asked for another owner: 403 (its MRO wins)
    app.add_exception_handler(OverflowError, out_of_range)
    app.add_exception_handler(RecursionError, too_deep)
    app.add_exception_handler(LookupError, not_found)
    app.add_exception_handler(optional.Unavailable, unavailable)
    app.add_exception_handler(StoreError, store_error)
    for engine_error in ENGINE_ERRORS:  # an engine's own error from a read not yet behind an area
        if engine_error is not StoreError:
            app.add_exception_handler(engine_error, sqlite_error)
    app.add_exception_handler(QueueFull, busy)
