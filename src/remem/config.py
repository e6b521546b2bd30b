"""Settings: defaults → ``REMEM_HOME/config.yaml`` → ``REMEM_*`` environment variables.

Dotted keys (``recall.token_budget``) address nested values. Every default carries a short
comment saying why it is what it is.
"""

from __future__ import annotations

import copy
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULTS: dict[str, Any] = {
    "owner": "default",            # the profile every agent writes to unless configured otherwise
    "database": "remem.db",        # relative to REMEM_HOME; one SQLite file is easy to back up
    "server": {
        "host": "127.0.0.1",       # loopback only: memories are private
        "port": 7077,              # fixed so hooks find the daemon without discovery
    },
    "embedding": {
        "model": "default",        # "default" = the measured local default (see bench/RESULTS.md)
        "enabled": True,           # embeddings run in the background; lexical recall works without
        "batch_size": 32,          # small batches keep the job queue responsive on 2 cores
        "onnx": True,              # e5-small on onnxruntime in the daemon: same weights, ~3x faster
        "openai_base_url": "",     # set to use an OpenAI-compatible server (Ollama, vLLM, …)
        "openai_model": "",
        "related_margin": "auto",  # packets keep a vector hit this much closer than the owner's typical
                                   # memory; "auto" = the model's calibrated value (docs/recall.md)
    },
    "recall": {
        "token_budget": 2000,      # enough for 5–8 memories without crowding the agent's context
    },
    "ingest": {
        "max_turn_bytes": 2 * 1024 * 1024,  # larger turns are skipped whole, never truncated
        "max_tool_output": 2000,   # per tool call; keeps the trajectory readable
    },
    "sync": {
        "auto": True,              # "auto-sync sessions": import new history in the background
        "interval_seconds": 300,   # five minutes: fresh enough, cheap on battery
    },
    "integrations": {
        "auto_install": False,     # never touch an agent's config without being asked
    },
    "hooks": {
        "timeout": 8.0,            # seconds per daemon request from a hook; far inside every agent's
                                   # 60 s hook limit (REMEM_HOOK_TIMEOUT wins; at most 45)
        "session_digest": True,    # SessionStart tells the agent what was done lately in this project
    },
    "agents": {},                  # per-agent: {isolated: bool, owner: str, read_owners: [..]}
}

ENV_PREFIX = "REMEM_"
# Environment variables that map to settings (others like REMEM_HOME are paths, not settings).
ENV_KEYS = {
    "REMEM_OWNER": "owner",
    "REMEM_PORT": "server.port",
    "REMEM_HOST": "server.host",
    "REMEM_EMBEDDING_MODEL": "embedding.model",
    "REMEM_EMBEDDING_ENABLED": "embedding.enabled",
    "REMEM_TOKEN_BUDGET": "recall.token_budget",
    "REMEM_AUTO_SYNC": "sync.auto",
}


class ConfigError(ValueError):
    """A setting that cannot be read, parsed or written."""


#: numeric settings and the range ``set`` accepts (inclusive); the rest are checked by type
RANGES: dict[str, tuple[float, float]] = {
    "server.port": (1, 65535),
    "embedding.batch_size": (1, 4096),
    "recall.token_budget": (800, 4000),
    "ingest.max_turn_bytes": (1024, 1 << 30),
    "ingest.max_tool_output": (0, 1 << 24),
    "sync.interval_seconds": (30, 7 * 86400),
    "hooks.timeout": (0.05, 45.0),
}


def home_dir(home: str | os.PathLike[str] | None = None) -> Path:
    """The data home: explicit argument, else ``REMEM_HOME``, else ``~/.remem``."""
    if home is not None:
        return Path(home).expanduser()
    env = os.environ.get("REMEM_HOME")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".remem"


def _coerce(value: str, like: Any) -> Any:
    if isinstance(like, bool):
        low = value.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"expected true/false, got {value!r}")
    if isinstance(like, int):
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"expected an integer, got {value!r}") from None
    if isinstance(like, float):
        try:
            return float(value)
        except ValueError:
            raise ConfigError(f"expected a number, got {value!r}") from None
    if isinstance(like, (dict, list)):
        import yaml

        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError as e:
            raise ConfigError(f"invalid YAML value: {e}") from None
        if not isinstance(parsed, type(like)):
            raise ConfigError(f"expected a {type(like).__name__}")
        return parsed
    return value


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


@dataclass
class Config:
    """Resolved settings for one home. ``file_values`` is what config.yaml holds."""

    home: Path
    values: dict[str, Any]
    file_values: dict[str, Any]

    @property
    def path(self) -> Path:
        return self.home / "config.yaml"

    @property
    def db_path(self) -> Path:
        p = Path(str(self.values["database"]))
        return p if p.is_absolute() else self.home / p

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def token_path(self) -> Path:
        return self.home / "token"

    def get(self, key: str) -> Any:
        try:
            return _get(self.values, key)
        except KeyError:
            raise ConfigError(f"unknown setting: {key}") from None

    def set(self, key: str, raw: str | Any) -> Any:
        """Validate and persist one setting into config.yaml; returns the stored value."""
        try:
            like = _get(DEFAULTS, key)
        except KeyError:
            if not key.startswith("agents."):
                raise ConfigError(f"unknown setting: {key}") from None
            like = ""
        value = _coerce(raw, like) if isinstance(raw, str) else raw
        if key == "owner" and not str(value).strip():
            raise ConfigError("owner must not be empty")
        if key in RANGES:
            lo, hi = RANGES[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
                raise ConfigError(f"{key} must be a number between {lo:g} and {hi:g}, got {value!r}")
        if key == "embedding.related_margin":
            value = related_margin_value(value)
        _set(self.file_values, key, value)
        save_file(self.path, self.file_values)
        _set(self.values, key, value)
        return value

    def agent_settings(self, agent: str) -> dict[str, Any]:
        agents = self.values.get("agents") or {}
        got = agents.get(agent) or {}
        return got if isinstance(got, dict) else {}


def related_margin_value(value: Any) -> Any:
    """``embedding.related_margin``: "auto" or a cosine difference in [-2, 2]."""
    if isinstance(value, str) and value.strip().lower() in ("auto", ""):
        return "auto"
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"embedding.related_margin must be \"auto\" or a number in [-2, 2], got {value!r}") from None
    if not -2.0 <= f <= 2.0:
        raise ConfigError(f"embedding.related_margin must be in [-2, 2], got {f}")
    return f


def save_file(path: Path, data: dict[str, Any]) -> None:
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=True, allow_unicode=True), encoding="utf-8")
    os.replace(tmp, path)


def load(home: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None) -> Config:
    """Resolve settings for ``home`` (defaults → config.yaml → environment)."""
    import yaml

    h = home_dir(home)
    env = dict(os.environ) if env is None else env
    path = h / "config.yaml"
    file_values: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path}: not valid YAML ({e.__class__.__name__})") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a mapping at the top level")
        file_values = loaded or {}
    values = _merge(DEFAULTS, file_values)
    for var, key in ENV_KEYS.items():
        if var in env and env[var] != "":
            _set(values, key, _coerce(env[var], _get(DEFAULTS, key)))
    try:
        _set(values, "embedding.related_margin", related_margin_value(_get(values, "embedding.related_margin")))
    except KeyError:
        pass  # an "embedding" that is not a mapping is reported where it is used
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    return Config(home=h, values=values, file_values=file_values)


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
