"""The settings as validated JSON, so that a hook (and any short command) reads them with ``json``
alone — no pydantic, no PyYAML.

``config.save_file`` (every ``remem config set``, the API's PATCH) and ``Remem.init`` write
``REMEM_HOME/hook-settings.json`` (mode 0600): the defaults and config.yaml's values after the model
in ``settings.py`` checked them, and per key its type, range and environment variable. It never holds
a secret: a ``database.url`` with a password is not mirrored at all. The environment differs per
process, so it is not in the file: :func:`apply_env` applies the declared ``REMEM_*`` variables. The
mirror records the size and mtime of config.yaml and of ``settings.py``; when either changed behind
it (a hand edit, an upgrade), it is stale and the full settings are read (and the mirror rewritten).
Standard library only. Do not edit the file: edit config.yaml or use ``remem config set``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

NAME = "hook-settings.json"
VERSION = 2
_SCHEMA = Path(__file__).with_name("settings.py")


def _stamp(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def write(home: Path, values: Mapping[str, Any], specs: Mapping[str, Mapping[str, Any]], *,
          withheld: list[str] | None = None) -> None:
    """Atomically replace the mirror (0600). ``values``: the checked settings as plain data, with
    every secret emptied; ``withheld`` names the secrets config.yaml sets (``learn.llm.api_key``), so
    that a full read goes to config.yaml for them while a hook, which never needs one, reads the mirror."""
    body = json.dumps({"version": VERSION, "config": _stamp(home / "config.yaml"), "schema": _stamp(_SCHEMA),
                       "values": dict(values), "specs": dict(specs), "withheld": list(withheld or [])},
                      sort_keys=True, ensure_ascii=False)
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
    """The mirror, or None when missing, unreadable, or older than config.yaml or the model."""
    try:
        data = json.loads((home / NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION \
            or data.get("config") != _stamp(home / "config.yaml") or data.get("schema") != _stamp(_SCHEMA) \
            or not isinstance(data.get("values"), dict) or not isinstance(data.get("specs"), dict):
        return None
    return data


def fresh(home: Path) -> bool:
    return read(home) is not None


def _parse(raw: str, spec: Mapping[str, Any], strict: bool) -> Any:
    """One variable's value by the setting's type (and, ``strict``, its range); ValueError when it is
    not one. Not strict, a number out of range passes: the hook clamps its timeout itself."""
    kind = spec.get("type")
    if kind == "bool":
        low = raw.strip().lower()
        if low in ("1", "true", "yes", "on", "t", "y"):
            return True
        if low in ("0", "false", "no", "off", "f", "n"):
            return False
        raise ValueError(raw)
    if kind in ("int", "float"):
        value: float = int(raw.strip()) if kind == "int" else float(raw)
        if math.isnan(value) or strict and (spec.get("ge") is not None and value < spec["ge"]
                                            or spec.get("le") is not None and value > spec["le"]):
            raise ValueError(raw)
        return value
    if kind == "text" and not spec.get("url") and (raw.strip() or not spec.get("nonempty")):
        return raw
    if kind == "text" and spec.get("url"):   # database.url: the store's own parser (standard library only)
        from .store.url import ENGINES

        scheme = raw.strip().split("://", 1)[0].lower() if "://" in raw else "sqlite"
        if scheme in (*ENGINES, "postgres", "postgresql+psycopg"):
            return raw.strip()
    raise ValueError(raw)   # other shapes are checked by the model


def apply_env(data: Mapping[str, Any], env: Mapping[str, str], *, strict: bool = True
              ) -> tuple[dict[str, Any], dict[str, str]] | None:
    """The mirrored values with the declared variables applied, and which variable set each key.
    A variable that does not parse: ``strict`` → None (the caller reads the full settings, whose
    check reports it); else it is ignored (a hook fails open)."""
    values = json.loads(json.dumps(data["values"]))
    used: dict[str, str] = {}
    for key, spec in data["specs"].items():
        var = spec.get("env")
        raw = env.get(var) if var else None
        if not raw:
            continue
        try:
            value = _parse(raw, spec, strict)
        except ValueError:
            if strict:
                return None
            continue
        put(values, key, value)
        used[key] = var
    return values, used


def put(tree: dict[str, Any], key: str, value: Any) -> None:
    """Set a dotted key in a nested mapping, making the sections on the way."""
    node = tree
    *head, last = key.split(".")
    for part in head:
        node = node.setdefault(part, {})
    node[last] = value


def lookup(values: Mapping[str, Any], specs: Mapping[str, Any], key: str) -> Any:
    """A declared dotted key's value in the plain settings (an agent not configured: the defaults);
    ``UndeclaredSetting`` for a key the model does not declare."""
    from .errors import UndeclaredSetting

    parts = key.split(".")
    if parts[0] == "agents" and len(parts) in (2, 3):
        agent = {k.rsplit(".", 1)[1]: s.get("default") for k, s in specs.items() if k.startswith("agents.<id>.")}
        agent.update((values.get("agents") or {}).get(parts[1]) or {})
        if len(parts) == 2:
            return agent
        if f"agents.<id>.{parts[2]}" in specs:
            return agent[parts[2]]
        raise UndeclaredSetting(key)
    if key not in specs and not (len(parts) == 1 and any(k.startswith(key + ".") for k in specs)):
        raise UndeclaredSetting(key)
    node: Any = values
    for part in parts:
        node = node[part]
    return node


class HookSettings:
    """What a hook reads: the mirror with this process's variables applied (leniently)."""

    def __init__(self, data: Mapping[str, Any], env: Mapping[str, str]) -> None:
        got = apply_env(data, env, strict=False)
        assert got is not None
        self.values, self.env_used = got
        self.specs = data["specs"]

    def get(self, key: str) -> Any:
        return lookup(self.values, self.specs, key)

    def agent(self, agent: str) -> dict[str, Any]:
        got = (self.values.get("agents") or {}).get(agent)
        return got if isinstance(got, dict) else {}


def load(home: Path, env: Mapping[str, str]) -> HookSettings:
    """The hook's settings for ``home``: the mirror, else the full settings once (and a new mirror)."""
    data = read(home)
    if data is None:
        from . import config

        cfg = config.load(home, env={})
        data = cfg.mirror()
        if home.is_dir():
            try:
                cfg.write_hook_settings()
            except OSError:
                pass
    return HookSettings(data, env)
