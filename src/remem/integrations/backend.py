"""Where the hook gets memories from and writes turns to: the daemon, else SQLite directly.

``Backend`` tries the daemon over HTTP first (it has the embedder loaded, so its recall is
hybrid) and falls back to the core library on the same database (lexical recall only, no numpy,
no model) when the daemon is down, slow, or lacks the endpoint. Either way a captured turn goes
through ``Remem.add_turns(..., live=True)``, so a later history import of the same session
meets it instead of duplicating it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import hook_settings
from ..model import ToolCall, TurnIn
from .client import DaemonClient, DaemonUnavailable

if TYPE_CHECKING:
    from ..core import Remem

# REST paths on the daemon (server/routes owns them; a 404 simply means "use the fallback")
ENDPOINTS = {
    "recall": "/api/v1/recall/turn-start",     # {prompt, agent, project} -> packet {text, items}
    "session_start": "/api/v1/recall/session-start",   # {agent, project} -> core facts {text, items}
    "repair": "/api/v1/recall/repair",         # {error, tool, command, agent, project, ...} -> packet {text, items}
    "capture": "/api/v1/turns",                # {turns: [...], live: true, wait} -> {results: [...]}
    "search": "/api/v1/memories/search",       # ?q=&k=&project=&agent= -> {results: [...]}
}

DEFAULT_TIMEOUT = 8.0      # seconds per daemon request; far inside every agent's 60 s hook limit
MAX_TIMEOUT = 45.0         # the hard ceiling for one memory request


def hook_timeout(settings: hook_settings.HookSettings) -> float:
    """Seconds per daemon request: ``hooks.timeout`` (``REMEM_HOOK_TIMEOUT`` wins), always 0.05–45."""
    try:
        value = float(settings.get("hooks.timeout"))
    except (TypeError, ValueError):
        value = DEFAULT_TIMEOUT
    return max(0.05, min(MAX_TIMEOUT, value)) if value == value else DEFAULT_TIMEOUT


def turn_to_dict(t: TurnIn) -> dict[str, Any]:
    return {"request": t.request, "reply": t.reply, "actions": [a.to_dict() for a in t.actions],
            "owner": t.owner, "agent": t.agent, "project": t.project, "session_id": t.session_id,
            "source_key": t.source_key, "status": t.status, "started_at": t.started_at,
            "ended_at": t.ended_at, "model": t.model, "tags": t.tags}


class Backend:
    def __init__(self, home: str | os.PathLike[str] | None = None, *, env: dict[str, str] | None = None,
                 use_daemon: bool = True) -> None:
        self.env = dict(os.environ) if env is None else env
        self.home = home_of(home)
        # the hook's few settings from their JSON mirror: no pydantic or PyYAML on the hook path
        self.settings = hook_settings.load(self.home, self.env)
        self.timeout = hook_timeout(self.settings)
        self.use_daemon = use_daemon and self.env.get("REMEM_HOOK_DAEMON", "1") not in ("0", "false", "no")
        self._mem: Remem | None = None
        self._client: DaemonClient | None = None
        self.via = ""          # "daemon" or "local": what served the last call (for logs and tests)

    # -- the two routes ------------------------------------------------------------------
    @property
    def client(self) -> DaemonClient | None:
        if not self.use_daemon:
            return None
        if self._client is None:
            token_path = self.home / "token"
            try:
                token = token_path.read_text(encoding="utf-8").strip()
            except OSError:
                return None     # no token: no daemon was ever started for this home
            host, port = self._daemon_address()
            self._client = DaemonClient(host, port, token, timeout=self.timeout,
                                        breaker=self.home / "hooks" / "daemon.down")
        return self._client

    def _daemon_address(self) -> tuple[str, int]:
        """Where this home's daemon listens: the address it wrote into its lock file (``remem up --port
        N`` picks another port than the setting), else the ``server.host`` / ``server.port`` settings."""
        host, port = str(self.settings.get("server.host")), int(self.settings.get("server.port"))
        try:
            info = json.loads((self.home / "daemon.lock").read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            return host, port
        if isinstance(info, dict) and isinstance(info.get("port"), int) and 0 < info["port"] < 65536:
            got = str(info.get("host") or host)
            if got in ("127.0.0.1", "localhost", "::1"):     # loopback only: never follow a file elsewhere
                return got, int(info["port"])
        return host, port

    @property
    def mem(self) -> Remem:
        if self._mem is None:
            from ..core import Remem

            # lexical only in the hook process: never load the embedding model here
            env = dict(self.env)
            env["REMEM_EMBEDDING_ENABLED"] = "false"
            env.pop("REMEM_HOOK_TIMEOUT", None)   # the hook clamps its own; the library does not need it
            self._mem = Remem(self.home, env=env)
        return self._mem

    def close(self) -> None:
        if self._mem is not None:
            self._mem.close()

    def _daemon(self, method: str, key: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        c = self.client
        if c is None:
            raise DaemonUnavailable("daemon disabled")
        got = c.request(method, ENDPOINTS[key], body, params=params)
        self.via = "daemon"
        return got

    def owner_for(self, agent: str) -> str:
        """Whose memory ``agent``'s turns are (its isolated owner, an explicit one, or the profile)."""
        s = self.settings.agent(agent)
        if s.get("owner"):
            return str(s["owner"])
        if s.get("isolated"):
            return f"agent:{agent}"
        return str(self.settings.get("owner"))

    def read_owners(self, agent: str) -> list[str]:
        """Whose memory ``agent`` may read: its own owner plus its ``read_owners`` (as
        ``Remem.scope(as_agent=…)`` computes it; every read of the hook takes this)."""
        extra = self.settings.agent(agent).get("read_owners") or []
        return list(dict.fromkeys([self.owner_for(agent), *(str(o) for o in extra)]))

    # -- operations ----------------------------------------------------------------------
    def recall(self, prompt: str, *, agent: str, project: str, session_id: str = "",
               core_shown: bool = False) -> dict[str, Any]:
        """The turn-start packet: {"text": str, "items": [...]} ("" text when nothing fits).
        ``core_shown``: this session's start context carried the core facts (:meth:`session_start`)."""
        try:
            got = self._daemon("POST", "recall", {"prompt": prompt, "agent": agent, "project": project,
                                                  "session_id": session_id, "core_shown": core_shown})
            if isinstance(got, dict) and isinstance(got.get("text"), str):
                return got
        except DaemonUnavailable:
            pass
        self.via = "local"
        return self.mem.turn_start(prompt, agent=agent, project=project or None, session=session_id or None,
                                   core_shown=core_shown)

    def session_start(self, *, agent: str, project: str) -> dict[str, Any]:
        """The project's core facts for the session's start context: {"text": str, "items": [...]}."""
        try:
            got = self._daemon("POST", "session_start", {"agent": agent, "project": project})
            if isinstance(got, dict) and isinstance(got.get("text"), str):
                return got
        except DaemonUnavailable:
            pass
        self.via = "local"
        return self.mem.session_start(project=project or None, agent=agent)

    def capture(self, turns: list[TurnIn], *, wait: bool = True) -> list[dict[str, Any]]:
        """Store live turns. ``wait`` False: the daemon answers at once even while another writer
        holds the database (the turns wait in its queue, in order; the results are then empty)."""
        if not turns:
            return []
        try:
            got = self._daemon("POST", "capture", {"live": True, "wait": wait,
                                                   "turns": [turn_to_dict(t) for t in turns]})
            if isinstance(got, dict) and isinstance(got.get("results"), list):
                return got["results"]
        except DaemonUnavailable:
            pass
        self.via = "local"
        res = self.mem.add_turns(turns, live=True)
        return [r.to_dict() for r in res.results]

    def search(self, query: str, *, as_agent: str, k: int = 5, project: str | None = None
               ) -> list[dict[str, Any]]:
        """Search as ``as_agent`` reads (its owners), on the daemon or the database."""
        owners = self.read_owners(as_agent)
        try:
            got = self._daemon("GET", "search", params={"q": query, "k": k, "project": project,
                                                        "owner": ",".join(owners)})
            items = got.get("results", got.get("items")) if isinstance(got, dict) else got
            if isinstance(items, list):
                return [it for it in items if not isinstance(it, dict) or it.get("owner", owners[0]) in owners]
        except DaemonUnavailable:
            pass
        self.via = "local"
        return self.mem.search(query, k=k, scope=self._scope(as_agent, project=project))

    def _scope(self, agent: str, project: str | None = None) -> Any:
        from ..scope import Scope

        return Scope.of(self.read_owners(agent), project=project or None)

    def repair(self, error: str, *, tool: str, agent: str, command: str = "", project: str = "",
               session: str = "", attempts: list[dict[str, Any]] | None = None) -> str | None:
        """The recall engine's repair packet's text (the error family's procedures, avoid lines, past
        failures with what fixed them), read as ``agent`` reads, or None when this remem has no
        repair entry point. The daemon's first (its warm vector recall; it records the packet), else
        the same entry on the database, lexically (which then records it)."""
        try:
            got = self._daemon("POST", "repair", {"error": error, "tool": tool, "command": command, "agent": agent,
                                                  "project": project, "session_id": session,
                                                  "attempts": attempts or []})
            if isinstance(got, dict) and isinstance(got.get("text"), str):
                return got["text"]
        except DaemonUnavailable:
            pass
        fn = getattr(self.mem, "repair", None)
        if fn is None:
            return None
        self.via = "local"
        got = fn(error, scope=self._scope(agent), tool=tool, command=command, project=project or None,
                 session=session or None, attempts=attempts, agent=agent)
        return str(got.get("text") or "") if isinstance(got, dict) else None

    def get(self, memory_id: str, *, as_agent: str) -> dict[str, Any] | None:
        self.via = "local"     # exact reads are cheap and consistent straight from SQLite (WAL)
        return self.mem.get(memory_id, scope=self._scope(as_agent))

    def timeline(self, session_id: str, *, as_agent: str, limit: int = 200) -> list[dict[str, Any]]:
        self.via = "local"
        return self.mem.timeline(session_id, owner=self.read_owners(as_agent), limit=limit)

    def recent(self, project: str, *, as_agent: str, limit: int = 5) -> list[dict[str, Any]]:
        self.via = "local"
        return self.mem.list(owner=self.read_owners(as_agent), project=project or None, limit=limit)

    def add(self, text: str, *, agent: str, project: str = "", session: str = "",
            tags: list[str] | None = None) -> dict[str, Any]:
        """A note the agent chose to remember (the ``remem_memory_add`` tool), in its own owner."""
        self.via = "local"
        return self.mem.add(text, owner=self.owner_for(agent), agent=agent, project=project, session=session,
                            tags=tags or ["note"]).to_dict()


def tool_dicts(tools: list[ToolCall]) -> list[dict[str, Any]]:
    return [t.to_dict() for t in tools]


def home_of(home: str | os.PathLike[str] | None) -> Path:
    """As ``config.home_dir`` (argument, else ``REMEM_HOME``, else ``~/.remem``), without importing it."""
    if home is not None:
        return Path(home).expanduser()
    env = os.environ.get("REMEM_HOME")
    return Path(env).expanduser() if env else Path.home() / ".remem"
