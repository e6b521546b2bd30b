"""The few settings a hook reads, mirrored as JSON so the hook imports neither pydantic nor PyYAML.

``config.save_file`` (every ``remem config set``, the API's PATCH) and ``Remem.init`` write
``REMEM_HOME/hook-settings.json`` (mode 0600; owners, the port and limits: no secrets) with the
defaults and config.yaml's values — not the environment, which differs per process: the hook applies
the declared ``REMEM_*`` variables itself. The mirror records config.yaml's size and mtime; when the
file changed behind it (edited by hand), :func:`load` reads the full settings once and rewrites it.
Standard library only: the tool-event path of the hook touches nothing heavier.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

NAME = "hook-settings.json"
VERSION = 1
#: what the hook and its backend read (settings.py declares them)
KEYS = ("owner", "server.host", "server.port", "hooks.timeout", "hooks.session_digest",
        "ingest.max_turn_bytes", "agents")


def _stamp(home: Path) -> list[int] | None:
    try:
        st = (home / "config.yaml").stat()
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def write(home: Path, values: Mapping[str, Any], env_names: Mapping[str, str]) -> None:
    """Atomically replace the mirror (0600)."""
    body = json.dumps({"version": VERSION, "config": _stamp(home), "values": dict(values),
                       "env": dict(env_names)}, sort_keys=True)
    tmp = home / f".{NAME}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(body)
    os.replace(tmp, home / NAME)


def remove(home: Path) -> None:
    try:
        (home / NAME).unlink()
    except OSError:
        pass


def read(home: Path) -> dict[str, Any] | None:
    """The mirror, or None when missing, unreadable or older than config.yaml."""
    try:
        data = json.loads((home / NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION or data.get("config") != _stamp(home) \
            or not isinstance(data.get("values"), dict) or not all(k in data["values"] for k in KEYS):
        return None
    return data


def fresh(home: Path) -> bool:
    return read(home) is not None


def _coerce(raw: str, like: Any) -> Any:
    if isinstance(like, bool):
        low = raw.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(raw)
    if isinstance(like, int):
        return int(raw)
    if isinstance(like, float):
        return float(raw)
    return raw


class HookSettings:
    """The mirrored values with the environment applied; a variable that does not parse is ignored
    (a hook fails open; ``remem config`` reports it)."""

    def __init__(self, values: Mapping[str, Any], env_names: Mapping[str, str], env: Mapping[str, str]) -> None:
        self.values = dict(values)
        for key, var in env_names.items():
            raw = env.get(var)
            if raw and key in self.values:
                try:
                    self.values[key] = _coerce(raw, self.values[key])
                except ValueError:
                    pass

    def get(self, key: str) -> Any:
        return self.values[key]

    def agent(self, agent: str) -> dict[str, Any]:
        got = (self.values.get("agents") or {}).get(agent)
        return got if isinstance(got, dict) else {}


def load(home: Path, env: Mapping[str, str]) -> HookSettings:
    """The hook's settings for ``home``: the mirror, else the full settings once (and a new mirror)."""
    data = read(home)
    if data is None:
        from . import config

        cfg = config.load(home, env={})
        if home.is_dir():
            try:
                cfg.write_hook_settings()
            except OSError:
                pass
        data = read(home) or {"values": {k: cfg.get(k) for k in KEYS},
                              "env": {k: s.env for k in KEYS if (s := _spec(k)) and s.env}}
    return HookSettings(data["values"], data.get("env") or {}, env)


def _spec(key: str) -> Any:
    from .settings import SPECS

    return SPECS.get(key)
