"""The database URL: ``sqlite:///path`` (the default, a file in the home) or ``postgresql://…``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .errors import StoreError

ENGINES = ("sqlite", "postgresql")


@dataclass(frozen=True)
class DatabaseURL:
    engine: str          # "sqlite" | "postgresql"
    url: str             # as given (a password is never logged: see ``safe``)
    path: Path | None    # the SQLite file; None for a server

    @property
    def safe(self) -> str:
        """The URL without its password, for messages and logs."""
        if self.engine == "sqlite":
            return self.url
        parts = urlsplit(self.url)
        if parts.password is None:
            return self.url
        host = parts.hostname or ""
        user = parts.username or ""
        port = f":{parts.port}" if parts.port else ""
        return parts._replace(netloc=f"{user}:***@{host}{port}").geturl()


def parse(url: str, home: Path) -> DatabaseURL:
    """``sqlite:///abs/path``, ``sqlite:///relative/to/home`` (three slashes, then a relative path),
    a bare file name (relative to the home, as older configs wrote ``database: remem.db``), or
    ``postgresql://user:pass@host:port/db``."""
    raw = str(url or "").strip()
    if not raw:
        raise StoreError("database.url is empty; use sqlite:///remem.db or postgresql://…")
    if "://" not in raw:  # a file name, as in config files before database.url
        p = Path(raw).expanduser()
        return DatabaseURL("sqlite", f"sqlite:///{p}", p if p.is_absolute() else home / p)
    scheme = raw.split("://", 1)[0].lower()
    if scheme in ("postgres", "postgresql", "postgresql+psycopg"):
        if not urlsplit(raw).path.strip("/"):
            raise StoreError("database.url names no database: postgresql://user@host:5432/DBNAME")
        return DatabaseURL("postgresql", raw, None)
    if scheme != "sqlite":
        raise StoreError(f"database.url: unknown engine {scheme!r}; use one of {', '.join(ENGINES)}")
    rest = unquote(raw.split("://", 1)[1])
    if not rest.startswith("/"):
        raise StoreError(f"database.url {raw!r}: write sqlite:///path (three slashes)")
    rest = rest[1:]
    if not rest or rest == ":memory:":
        raise StoreError("database.url needs a file: sqlite:///remem.db")
    p = Path(rest).expanduser()
    # sqlite:////abs/path (four slashes) is absolute; sqlite:///name is relative to the home
    return DatabaseURL("sqlite", raw, p if p.is_absolute() else home / p)
