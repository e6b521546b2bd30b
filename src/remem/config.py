"""Settings: defaults → ``REMEM_HOME/config.yaml`` → ``REMEM_*`` environment variables.

The keys, their types, defaults, reasons, variables and checks are declared once, in
``settings.py``; this module reads and writes the file around that model. ``Config.settings`` is the
typed object (``cfg.settings.recall.token_budget``); ``Config.get("recall.token_budget")`` is the
same value by dotted key, for declared keys only. Every save also writes ``hook-settings.json``, the
few values the hook reads without importing pydantic or PyYAML (``hook_settings.py``).
"""

from __future__ import annotations

import copy
import os
import secrets
from pathlib import Path
from typing import Any

from . import hook_settings
from . import settings as model
from .errors import ConfigError

__all__ = ["ConfigError", "Config", "DEFAULTS", "ENV_KEYS", "home_dir", "load", "save_file", "ensure_token"]

ENV_PREFIX = "REMEM_"
#: environment variables that set a setting (others like REMEM_HOME are paths, not settings)
ENV_KEYS: dict[str, str] = model.ENV_KEYS
#: the defaults as plain data (what ``config show`` prints for an empty file)
DEFAULTS: dict[str, Any] = model.Settings().model_dump(mode="json")


def home_dir(home: str | os.PathLike[str] | None = None) -> Path:
    """The data home: explicit argument, else ``REMEM_HOME``, else ``~/.remem``."""
    if home is not None:
        return Path(home).expanduser()
    env = os.environ.get("REMEM_HOME")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".remem"


def _get(tree: dict[str, Any], key: str) -> Any:
    node: Any = tree
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def _set(tree: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = tree
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{key}: {part} is not a section")
    node[parts[-1]] = value


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _parse_value(key: str, raw: str) -> Any:
    """A value typed on the command line: YAML for lists and mappings, else the text (the model
    reads "true", "5", "0.5" as the setting's type)."""
    s = model.spec(key)
    if s is not None and s.type not in ("mapping", "list of text"):
        return raw
    import yaml

    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as e:
        raise ConfigError(f"{key}: invalid YAML value ({e.__class__.__name__})") from None


class _ReadOnly(dict):  # type: ignore[type-arg]
    """``Config.values``: a copy of the settings as plain data. Writing into it would change nothing,
    so it refuses: ``Config.override`` (this process) or ``Config.set`` (the file) change settings."""

    def _refuse(self, *_a: Any, **_k: Any) -> None:
        raise TypeError("Config.values is a read-only copy; use config.override(key, value) or config.set(key, value)")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = _refuse  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return _plain(self)

    __copy__ = __deepcopy__  # type: ignore[assignment]


def _plain(d: Any) -> Any:
    return {k: _plain(v) for k, v in d.items()} if isinstance(d, dict) else [_plain(v) for v in d] \
        if isinstance(d, list) else d


def _frozen(d: Any) -> Any:
    return _ReadOnly({k: _frozen(v) for k, v in d.items()}) if isinstance(d, dict) else d


class Config:
    """Resolved settings for one home. ``file_values`` is what config.yaml holds (keys this version
    does not declare stay there untouched); ``values`` the effective settings as plain data."""

    def __init__(self, home: Path, values: dict[str, Any] | None = None, file_values: dict[str, Any] | None = None,
                 *, env: dict[str, str] | None = None, settings: model.Settings | None = None) -> None:
        self.home = home
        self.file_values: dict[str, Any] = file_values if file_values is not None else {}
        self._env_tree, self.env_used = model.env_tree(env or {})
        self.settings = settings if settings is not None else model.resolve(
            _merge(values if values is not None else self.file_values, self._env_tree), where=str(self.path),
            env_used=self.env_used)

    @classmethod
    def unchecked(cls, home: Path, env: dict[str, str] | None = None) -> Config:
        """The file as it is, even holding a bad value, so that ``set`` can fix it (``set`` checks
        the whole file it would write); the settings are the defaults meanwhile."""
        return cls(home, file_values=read_file(home / "config.yaml"), env=env, settings=model.Settings())

    @property
    def values(self) -> dict[str, Any]:
        return _frozen(self.settings.model_dump(mode="json"))  # type: ignore[no-any-return]

    @property
    def path(self) -> Path:
        return self.home / "config.yaml"

    @property
    def database_url(self) -> str:
        return self.settings.database.url

    @property
    def db_path(self) -> Path:
        """The SQLite file of ``database.url`` (a server URL has none: ``ConfigError``)."""
        from .store.url import parse

        u = parse(self.database_url, self.home)
        if u.path is None:
            raise ConfigError(f"database.url {u.safe} is a server, not a file")
        return u.path

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def token_path(self) -> Path:
        return self.home / "token"

    def get(self, key: str) -> Any:
        """The typed value of a declared key; an undeclared one raises ``UndeclaredSetting``."""
        return self.settings.get(key)

    def set(self, key: str, raw: str | Any) -> Any:
        """Validate and persist one setting into config.yaml; returns the stored value. A bad value
        raises ``ConfigError`` and changes nothing (neither the file nor this object)."""
        try:
            model.spec(key)
        except model.UndeclaredSetting:
            raise ConfigError(f"unknown setting: {key} (`remem config list` shows them all)") from None
        value = _parse_value(key, raw) if isinstance(raw, str) else raw
        new = copy.deepcopy(self.file_values)
        if isinstance(new.get("database"), str):   # an old `database: remem.db`, rewritten as its URL
            new["database"] = {"url": model.legacy_database_url(new["database"])}
        _set(new, key, value)
        checked = model.resolve(new)
        got = checked.get(key)
        if not isinstance(got, dict):
            _set(new, key, got)    # the typed value ("5" → 5.0 for hooks.timeout)
        settings = model.resolve(_merge(new, self._env_tree), where=str(self.path), env_used=self.env_used)
        save_file(self.path, new)
        self.file_values, self.settings = new, settings
        return got

    def override(self, key: str, value: Any) -> None:
        """Change a setting in this process only (benchmarks, tests), validated, never saved."""
        data = self.settings.model_dump(mode="json")
        _set(data, key, value)
        self.settings = model.resolve(data, where=f"override of {key}")

    def agent_settings(self, agent: str) -> dict[str, Any]:
        got = self.settings.agents.get(agent)
        return got.model_dump() if got is not None else {}

    def write_hook_settings(self) -> None:
        """The mirror the hook reads (defaults + file, no environment: the hook applies its own)."""
        plain = model.resolve(self.file_values, where=str(self.path))
        hook_settings.write(self.home, {k: plain.get(k) for k in hook_settings.KEYS},
                            {k: s.env for k in hook_settings.KEYS if (s := model.SPECS.get(k)) and s.env})


def save_file(path: Path, data: dict[str, Any]) -> None:
    """Write config.yaml atomically (a crash leaves the old file or the new one, never half), and
    the hook's mirror of it beside."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=True, allow_unicode=True), encoding="utf-8")
    os.replace(tmp, path)
    try:
        Config(path.parent, file_values=data).write_hook_settings()
    except (ConfigError, OSError):
        hook_settings.remove(path.parent)   # the hook then reads config.yaml itself


def read_file(path: Path) -> dict[str, Any]:
    """config.yaml as a mapping ({} when absent); never changes the file."""
    import yaml

    if not path.exists():
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid YAML ({e.__class__.__name__})") from None
    if loaded is not None and not isinstance(loaded, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return loaded or {}


def load(home: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None) -> Config:
    """Resolve settings for ``home`` (defaults → config.yaml → environment). A bad value raises
    ``ConfigError`` naming the key and the file or variable; the file is never rewritten here."""
    h = home_dir(home)
    env = dict(os.environ) if env is None else env
    return Config(h, file_values=read_file(h / "config.yaml"), env=env)


def ensure_token(path: Path) -> str:
    """Read the API token, creating a random one (mode 0600) on first use."""
    if path.exists():
        tok = path.read_text(encoding="utf-8").strip()
        if tok:
            return tok
    path.parent.mkdir(parents=True, exist_ok=True)
    tok = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(tok + "\n")
    os.chmod(path, 0o600)
    return tok
