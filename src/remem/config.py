"""Settings: defaults → ``REMEM_HOME/config.yaml`` → ``REMEM_*`` environment variables.

The keys, their types, defaults, reasons, variables and checks are declared once, in
``settings.py``; this module reads and writes the file around that model. ``Config.settings`` is the
typed object (``cfg.settings.recall.token_budget``); ``Config.get("recall.token_budget")`` is the
same value by dotted key, for declared keys only.

Every save also writes ``hook-settings.json``, the checked settings as JSON (``hook_settings.py``).
``load`` reads that mirror when it is fresh and the environment's values parse, so a hook or a short
command needs neither pydantic nor PyYAML; ``Config.settings`` builds the typed model on first use.
"""

from __future__ import annotations

import copy
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import hook_settings
from .errors import ConfigError, UndeclaredSetting

if TYPE_CHECKING:
    from . import settings as model_t

__all__ = ["ConfigError", "Config", "UndeclaredSetting", "home_dir", "load", "save_file", "ensure_token"]

ENV_PREFIX = "REMEM_"


def __getattr__(name: str) -> Any:
    """``ENV_KEYS`` (variable → dotted key) and ``DEFAULTS`` (the defaults as plain data), from the
    model, computed when first asked for (importing the model loads pydantic)."""
    if name not in ("ENV_KEYS", "DEFAULTS"):    # also what the import system probes (__path__, …)
        raise AttributeError(name)
    from . import settings as model

    return model.ENV_KEYS if name == "ENV_KEYS" else model.Settings().model_dump(mode="json")


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
    from . import settings as model

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
                 *, env: dict[str, str] | None = None, settings: model_t.Settings | None = None) -> None:
        from . import settings as model

        self.home = home
        self._file: dict[str, Any] | None = file_values if file_values is not None else {}
        self._env = dict(env or {})
        tree, self.env_used = model.env_tree(self._env)
        self._settings: model_t.Settings | None = settings if settings is not None else model.resolve(
            _merge(values if values is not None else self._file, tree), where=str(self.path), env_used=self.env_used)
        self._plain: dict[str, Any] | None = None
        self._specs: dict[str, Any] | None = None

    @classmethod
    def _from_mirror(cls, home: Path, env: dict[str, str]) -> Config | None:
        """From hook-settings.json without pydantic, when it is fresh and every variable parses."""
        data = hook_settings.read(home)
        got = hook_settings.apply_env(data, env, strict=True) if data is not None else None
        if data is None or got is None or data.get("withheld"):
            return None     # a secret is set in config.yaml: the full settings read it from there
        self = cls.__new__(cls)
        self.home, self._file, self._env, self._settings = home, None, dict(env), None
        self._plain, self.env_used = got
        self._specs = data["specs"]
        return self

    @classmethod
    def unchecked(cls, home: Path, env: dict[str, str] | None = None) -> Config:
        """The file as it is, even holding a bad value, so that ``set`` can fix it (``set`` checks
        the whole file it would write); the settings are the defaults meanwhile."""
        from . import settings as model

        return cls(home, file_values=read_file(home / "config.yaml"), env=env, settings=model.Settings())

    @property
    def settings(self) -> model_t.Settings:
        """The typed settings (built from the checked mirror on first use)."""
        if self._settings is None:
            from . import settings as model

            assert self._plain is not None
            self._settings = model.resolve(self._plain, where=str(self.home / hook_settings.NAME))
        return self._settings

    @settings.setter
    def settings(self, value: model_t.Settings) -> None:
        self._settings, self._plain = value, None

    @property
    def file_values(self) -> dict[str, Any]:
        if self._file is None:
            self._file = read_file(self.path)
        return self._file

    @property
    def values(self) -> dict[str, Any]:
        plain = self._plain if self._settings is None else self._settings.model_dump(mode="json")
        return _frozen(plain)  # type: ignore[no-any-return]

    @property
    def path(self) -> Path:
        return self.home / "config.yaml"

    @property
    def database_url(self) -> str:
        return str(self.get("database.url"))

    @property
    def database_label(self) -> str:
        """The SQLite file, or the server URL without its password: what messages show."""
        from .store.url import parse

        u = parse(self.database_url, self.home)
        return str(u.path) if u.path is not None else u.safe

    @property
    def on_server(self) -> bool:
        """``database.url`` names a server (PostgreSQL), not a file."""
        from .store.url import parse

        return parse(self.database_url, self.home).path is None

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
        if self._settings is None and self._plain is not None and self._specs is not None:
            return hook_settings.lookup(self._plain, self._specs, key)
        return self.settings.get(key)

    def set(self, key: str, raw: str | Any) -> Any:
        """Validate and persist one setting into config.yaml; returns the stored value. A bad value
        raises ``ConfigError`` and changes nothing (neither the file nor this object)."""
        from . import settings as model

        try:
            model.spec(key)
        except UndeclaredSetting:
            raise ConfigError(f"unknown setting: {key} (`remem config list` shows them all)") from None
        value = _parse_value(key, raw) if isinstance(raw, str) else raw
        if key == "embedding.model":
            _known_model(str(value))
        new = copy.deepcopy(self.file_values)
        if isinstance(new.get("database"), str):   # an old `database: remem.db`, rewritten as its URL
            new["database"] = {"url": model.legacy_database_url(new["database"])}
        _set(new, key, value)
        checked = model.resolve(new)
        got = checked.get(key)
        if not isinstance(got, dict):
            _set(new, key, got)    # the typed value ("5" → 5.0 for hooks.timeout)
        tree, _ = model.env_tree(self._env)
        settings = model.resolve(_merge(new, tree), where=str(self.path), env_used=self.env_used)
        save_file(self.path, new)
        self._file, self.settings = new, settings
        return got

    def override(self, key: str, value: Any) -> None:
        """Change a setting in this process only (benchmarks, tests), validated, never saved."""
        from . import settings as model

        data = self.settings.model_dump(mode="json")
        _set(data, key, value)
        self.settings = model.resolve(data, where=f"override of {key}")

    def agent_settings(self, agent: str) -> dict[str, Any]:
        got = (self.get("agents") or {}).get(agent)
        return dict(got) if got else {}

    def mirror(self) -> dict[str, Any]:
        """What hook-settings.json holds: defaults + file, checked (no environment)."""
        from . import settings as model

        plain = model.resolve(self.file_values, where=str(self.path)).model_dump(mode="json")
        withheld = []
        for key in model.SECRET_KEYS:      # a secret never reaches the mirror: its readers load config.yaml
            if hook_settings.lookup(plain, {key: {}}, key):
                hook_settings.put(plain, key, "")
                withheld.append(key)
        return {"values": plain, "specs": {k: s.plain() for k, s in model.SPECS.items()}, "withheld": withheld}

    def write_hook_settings(self) -> None:
        """Write the mirror (none when database.url holds a password: the mirror never holds a secret)."""
        from .store.url import parse

        m = self.mirror()
        if parse(m["values"]["database"]["url"], self.home).safe != m["values"]["database"]["url"]:
            hook_settings.remove(self.home)
            return
        hook_settings.write(self.home, m["values"], m["specs"], withheld=m["withheld"])


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
    return Config._from_mirror(h, env) or Config(h, file_values=read_file(h / "config.yaml"), env=env)


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


def _known_model(name: str) -> None:
    """An embedding model remem can load: a built-in, a plugin's (``register_embedders``) or "default".
    A typo would otherwise leave recall on words alone until `remem doctor` said why."""
    from .embed.embedders import EMBEDDERS

    known = sorted({"default", *EMBEDDERS})
    if name.strip() not in known:
        raise ConfigError(f"unknown embedding model {name!r}; known: {', '.join(known)} "
                          "(a plugin adds others: docs/plugins.md)")
