"""``Remem``: the core library every face (CLI, daemon, hooks, MCP) is a thin layer over."""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from . import config as configmod
from . import hook_settings, tasks
from .agents import canonical_agent
from .ingest.normalize import InputError, check_user_text
from .ingest.pipeline import BatchResult, WriteResult, import_record, learn_key, persist
from .model import ToolCall, TurnIn
from .recall.context import RecallContext, RecallSettings
from .scope import Scope
from .store import ENGINE_ERRORS, StoreError, open_store
from .store.errors import Locked
from .store.protocols import WriteStore

if TYPE_CHECKING:
    from .ingest.workers import PreparePool

EXPORT_VERSION = 1
MAX_PENDING_ACCESS = 1000  # recall hits waiting to be counted (oldest dropped past this)
ONNX_BACKLOG = tasks.ONNX_BACKLOG
RECORD_TRIES, RECORD_RETRY_S = 4, 0.02  # a packet record meeting another writer's lock: tries, and the pause
PRUNE_PACKETS_EVERY = 200  # every this many packet records, the old ones are pruned (learn.packets_*)
SAME_PACKET_SECONDS = 60.0  # the same packet for the same prompt of a session this soon is one record: a
#                             hook that gave up on a slow daemon builds it again while the daemon records its own
log = logging.getLogger(__name__)


class Remem:
    """One memory home. Thread-safe for reads; writes serialise on SQLite's lock."""

    def __init__(self, home: str | os.PathLike[str] | None = None, *, env: dict[str, str] | None = None,
                 readonly: bool = False) -> None:
        self.config = configmod.load(home, env)
        self.home = self.config.home
        self.readonly = readonly
        self.store = cast(WriteStore, open_store(self.config.database_url, self.home, readonly=readonly))
        self._embedder: Any = None
        self._embedder_error: str = ""
        self._onnx_wanted = False  # set by prepare_onnx: later embedders are prepared too
        self._lock = threading.Lock()
        self._access: list[tuple[Scope, builtins.list[str], float]] = []  # recall hits not yet counted
        self._access_lock = threading.Lock()
        self._recall: RecallContext | None = None
        self._pool: PreparePool | None = None   # an import's worker processes (import_workers)
        if not readonly:
            self.init()

    # -- home and connection -------------------------------------------------------------
    def init(self) -> dict[str, Any]:
        """Create the home, database, config file and token if missing (idempotent)."""
        try:
            self.home.mkdir(parents=True, exist_ok=True)
            self.config.log_dir.mkdir(exist_ok=True)
            os.chmod(self.home, 0o700)
        except OSError as e:
            raise StoreError(f"cannot create {self.home}: {e.strerror or e}") from None
        created = not self.config.path.exists()
        if created:
            configmod.save_file(self.config.path, self.config.file_values or {"owner": self.config.get("owner")})
        elif not hook_settings.fresh(self.home):
            self.config.write_hook_settings()
        token_new = not self.config.token_path.exists()
        configmod.ensure_token(self.config.token_path)
        applied = self.store.migrate()
        return {"home": str(self.home), "database": self.config.database_label, "config_created": created,
                "token_created": token_new, "migrations_applied": applied}

    def note_access(self, scope: Scope, ids: builtins.list[str], now: float) -> None:
        """Count that recall showed these turns. Written at once when the database is free,
        otherwise kept and written by a later call, a write, or ``close``: recall never waits on
        another writer for a counter."""
        if self.readonly or not ids:
            return
        with self._access_lock:
            self._access.append((scope, list(ids), now))
            del self._access[:-MAX_PENDING_ACCESS]
        self.flush_access(wait=False)

    def flush_access(self, *, wait: bool = True) -> int:
        """Write the pending access counts; ``wait=False`` gives up at once if another
        connection holds the write lock (they stay pending). Returns how many were written."""
        with self._access_lock:
            todo, self._access = self._access, []
        if not todo:
            return 0
        try:
            self.store.candidates.touch_many(todo, wait=wait)  # type: ignore[attr-defined]
            return len(todo)
        except (*self.store.errors, StoreError):  # type: ignore[attr-defined]  # busy (or failing): keep them for the next chance
            with self._access_lock:
                self._access[:0] = todo
                del self._access[:-MAX_PENDING_ACCESS]
            return 0

    def close(self) -> None:
        if self._access and not self.readonly:
            self.flush_access(wait=False)
        self.store.close()

    def __enter__(self) -> Remem:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def token(self) -> str:
        return configmod.ensure_token(self.config.token_path)

    # -- owners and scopes ---------------------------------------------------------------
    def owner_for(self, agent: str | None = None, owner: str | None = None) -> str:
        """Who a write belongs to: explicit owner, else the agent's isolated owner, else the profile."""
        if owner:
            return owner
        if agent:
            s = self.config.agent_settings(canonical_agent(agent))
            if s.get("owner"):
                return str(s["owner"])
            if s.get("isolated"):
                return f"agent:{canonical_agent(agent)}"
        return str(self.config.get("owner"))

    def scope(self, owner: str | builtins.list[str] | None = None, agent: str | None = None,
              project: str | None = None, *, as_agent: str | None = None) -> Scope:
        """The read scope. ``agent`` filters rows by agent label; ``as_agent`` reads as that agent
        (its isolated owner plus any extra ``read_owners`` from config)."""
        if owner:
            owners = [owner] if isinstance(owner, str) else list(owner)
        else:
            owners = [self.owner_for(as_agent)]
            if as_agent:
                extra = self.config.agent_settings(canonical_agent(as_agent)).get("read_owners") or []
                owners += [str(o) for o in extra]
        return Scope.of(owners, agent=agent, project=project)

    # -- writes ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def import_workers(self) -> Iterator[None]:
        """Inside: large writes (an import's batches) are prepared in worker processes while the
        writer writes (``ingest.workers``; started on the first large write, stopped on leaving).
        Nested uses share the outer one's."""
        if self._pool is not None:
            yield
            return
        from .ingest.workers import PreparePool, auto_workers

        self._pool = PreparePool(auto_workers(int(self.config.get("ingest.workers"))))
        try:
            yield
        finally:
            pool, self._pool = self._pool, None
            pool.close()

    def add_turns(self, turns: builtins.list[TurnIn], *, live: bool = False, defer_index: bool = False,
                  revive: bool = False, preserve: builtins.list[dict[str, Any] | None] | None = None,
                  fallback_ts: float | Sequence[float | None] | None = None, learn: bool = True,
                  wait: bool = True) -> BatchResult:
        """Every write goes through here into the one pipeline (``ingest.pipeline.persist``).
        ``learn`` False queues no learning for these turns (a team's turns pulled by ``remem team
        sync``: the team's learned memories come from its server). ``wait`` False raises ``Locked``
        (nothing written) instead of waiting while another writer holds the database."""
        if self.readonly:
            raise StoreError("this remem handle is read-only")
        res = persist(self.store, turns, max_bytes=int(self.config.get("ingest.max_turn_bytes")),
                      max_tool_output=int(self.config.get("ingest.max_tool_output")), live=live,
                      defer_index=defer_index, revive=revive, preserve=preserve, fallback_ts=fallback_ts,
                      learn_after=float(self.config.get("learn.delay_seconds"))
                      if learn and self.config.get("learn.enabled") else None, wait=wait, pool=self._pool)
        if self._access:
            self.flush_access(wait=False)  # this connection just wrote: the lock is likely free
        return res

    def add(self, text: str, *, owner: str | None = None, agent: str = "cli", project: str = "",
            session: str = "", reply: str = "", actions: builtins.list[ToolCall] | None = None,
            status: str = "succeeded", source_key: str = "", tags: builtins.list[str] | None = None,
            importance: float = 0.5, ts: float | None = None) -> WriteResult:
        """Store one memory (a note, or a request with its reply). Validates like a person typed it.
        An explicit add: a memory the user forgot comes back when it is added again."""
        check_user_text(text)
        if reply:
            check_user_text(reply)
        agent = canonical_agent(agent)
        turn = TurnIn(request=text, reply=reply, actions=actions or [], owner=self.owner_for(agent, owner),
                      agent=agent, project=project, session_id=session, source_key=source_key,
                      status=status, started_at=ts or time.time(), ended_at=ts or time.time(),
                      tags=tags or [], importance=importance)
        return self.add_turns([turn], revive=True).results[0]

    # -- reads -----------------------------------------------------------------------------
    def get(self, memory_id: str, *, owner: str | builtins.list[str] | None = None,
            scope: Scope | None = None) -> dict[str, Any] | None:
        sc = scope or self.scope(owner)
        return self.store.turns.get(sc, memory_id)

    # -- recall ----------------------------------------------------------------------------
    @property
    def recall(self) -> RecallContext:
        """What the recall engine runs on (built once, on first use): the store's read areas, the
        embedder, the recall settings, the clock, and where shown turns are counted."""
        if self._recall is None:
            with self._lock:
                if self._recall is None:
                    self._recall = RecallContext(self.store, embedder=self.embedder,  # type: ignore[arg-type]
                                                 embedder_error=lambda: self._embedder_error,
                                                 settings=self.recall_settings,
                                                 on_shown=lambda *a: self.note_access(*a))
        return self._recall

    @staticmethod
    def _recall_entries() -> Any:
        """recall/entry.py, imported on the first recall: its ~0.1 s of imports (query parsing, jieba
        hooks, ranking) are start-up a ``remem add`` does not need. (No import cycle: recall imports
        nothing of the façade; tests/test_architecture.py checks it.)"""
        from .recall import entry

        return entry

    def recall_settings(self) -> RecallSettings:
        return RecallSettings(embedding_enabled=bool(self.config.get("embedding.enabled")),
                              related_margin=self.config.get("embedding.related_margin"),
                              token_budget=int(self.config.get("recall.token_budget")),
                              half_lives=(float(self.config.get("learn.retention.half_life_rules")),  # HalfLives'
                                          float(self.config.get("learn.retention.half_life_decisions")),  # order
                                          float(self.config.get("learn.retention.half_life_facts")),
                                          float(self.config.get("learn.retention.half_life_procedures")),
                                          float(self.config.get("learn.retention.half_life_working_state")),
                                          float(self.config.get("learn.retention.half_life_other"))))

    def search(self, query: str, *, owner: str | builtins.list[str] | None = None, agent: str | None = None,
               project: str | None = None, k: int = 10, scope: Scope | None = None,
               explain: bool = False) -> builtins.list[dict[str, Any]]:
        sc = scope or self._with_teams(self.scope(owner, agent=agent, project=project), owner)
        return self._recall_entries().search(self.recall, query, sc, k=k, explain=explain)

    def _read_as(self, owner: str | builtins.list[str] | None, agent: str | None, scope: Scope | None) -> Scope:
        if scope is not None:
            return scope
        return self._with_teams(self.scope(owner, project=None, as_agent=agent), owner)

    def _with_teams(self, sc: Scope, owner: str | builtins.list[str] | None) -> Scope:
        """A recall read of the home's own memory also reads the teams this home mirrors from its
        team server (``remem team join``): local and team memories in one ranking. A read that names
        its owners reads exactly those."""
        if owner:
            return sc
        from .teamsync import mirrored_owners

        teams = mirrored_owners(self.home)
        return Scope.of([*sc.owners, *teams], agent=sc.agent, project=sc.project) if teams else sc

    def turn_start(self, prompt: str, *, owner: str | builtins.list[str] | None = None, agent: str | None = None,
                   project: str | None = None, budget: int | None = None,
                   scope: Scope | None = None, session: str | None = None,
                   core_shown: bool = False) -> dict[str, Any]:
        """The packet an agent receives before it answers ``prompt``: {"text", "items", ...}.
        ``agent`` reads as that agent (its owners); ``project`` ranks that project's memories higher
        and brings its learned memories; ``session`` (the agent's session id) lets the project's core
        facts come with a session's first prompt — unless ``core_shown``: the session's start context
        (:meth:`session_start`) already carried them."""
        entry, ctx = self._recall_entries(), self.recall
        sc = self._read_as(owner, agent, scope)
        out = entry.turn_start(ctx, prompt, sc, project=project,
                               budget=int(budget or ctx.settings.token_budget), session=session,
                               core_shown=core_shown)
        return self._recorded(out, prompt, "turn_start", sc, project=project, session=session, agent=agent)

    def session_start(self, *, project: str | None, owner: str | builtins.list[str] | None = None,
                      agent: str | None = None, budget: int | None = None,
                      scope: Scope | None = None) -> dict[str, Any]:
        """The project's core facts (commands, package manager, ≤ 3 must-follow rules) for a session's
        start context: {"text", "items", ...}, empty text when nothing is learned (recall/entry.py)."""
        entry, ctx = self._recall_entries(), self.recall
        return entry.session_start(ctx, self._read_as(owner, agent, scope), project=project,
                                   budget=int(budget or ctx.settings.token_budget))

    def sub_agent(self, task: str, *, owner: str | builtins.list[str] | None = None, agent: str | None = None,
                  project: str | None = None, budget: int | None = None,
                  scope: Scope | None = None) -> dict[str, Any]:
        """A sub-agent's task prompt → a smaller packet (recall/entry.py)."""
        sc = self._read_as(owner, agent, scope)
        out = self._recall_entries().sub_agent(self.recall, task, sc, project=project, budget=budget)
        return self._recorded(out, task, "sub_agent", sc, project=project, agent=agent)

    def repair(self, error: str, *, tool: str = "", owner: str | builtins.list[str] | None = None,
               agent: str | None = None, budget: int | None = None, scope: Scope | None = None,
               project: str | None = None, command: str = "", session: str | None = None,
               attempts: builtins.list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """After the same failure came back: the procedures learned for its error family (with
        ``project``), what was tried and failed before (``session`` and the open turn's ``attempts``
        count too), then past failures with the same error signature and what fixed them. Recorded
        as a packet (entry ``repair``) so feedback can judge it."""
        sc = self._read_as(owner, agent, scope)
        out = self._recall_entries().repair(self.recall, error, sc, tool=tool, budget=budget, project=project,
                                            command=command, session=session, attempts=attempts)
        return self._recorded(out, error, "repair", sc, project=project, session=session, agent=agent)

    def resume(self, query: str, *, session: str | None = None, owner: str | builtins.list[str] | None = None,
               agent: str | None = None, budget: int | None = None, scope: Scope | None = None,
               project: str | None = None) -> dict[str, Any]:
        """No ``session``: where work in ``project`` was left off (its newest working state) and up
        to 5 candidate episodes for ``query``; with one: that episode in full."""
        sc = self._read_as(owner, agent, scope)
        out = self._recall_entries().resume(self.recall, query, sc, session=session, budget=budget, project=project)
        return self._recorded(out, query, "resume", sc, project=project, agent=agent)

    def _recorded(self, packet: dict[str, Any], prompt: str, entry: str, scope: Scope, *,
                  project: str | None = None, session: str | None = None,
                  agent: str | None = None) -> dict[str, Any]:
        """Record what the packet contained (``store.packets``: ids and a prompt hash, never text) so
        its outcome can be judged later (issue 18); adds its ``packet_id``. Best effort and cheap: one
        small insert that never waits on the lock, tried RECORD_TRIES times RECORD_RETRY_S apart while
        another writer (an embedding batch) holds it, and never fails a recall (a packet not recorded is
        only a packet not judged)."""
        area = getattr(self.store, "packets", None)
        if area is None or self.readonly:
            return packet
        from .recall.record import packet_record

        now = time.time()
        rec = packet_record(packet, prompt, entry=entry, owner=scope.owners[0], project=project,
                            session=session, agent=canonical_agent(agent) if agent else None, now=now)
        if rec is None:
            return packet
        for attempt in range(1, RECORD_TRIES + 1):
            try:
                with self.store.transaction(wait=False):
                    pid = _same_packet(area, rec, now)
                    if pid is None:
                        pid = area.add(rec)
                        if pid % PRUNE_PACKETS_EVERY == 0:
                            area.prune(before=now - 86400.0 * float(self.config.get("learn.packets_days")),
                                       keep=int(self.config.get("learn.packets_max")))
                return {**packet, "packet_id": pid}
            except Locked as e:
                if attempt == RECORD_TRIES:
                    log.debug("packet not recorded: %s", e)
                    return packet
                time.sleep(RECORD_RETRY_S)
            except ENGINE_ERRORS as e:
                log.debug("packet not recorded: %s", e)
                return packet
        return packet

    def timeline(self, session_id: str, *, owner: str | builtins.list[str] | None = None,
                 limit: int = 500) -> builtins.list[dict[str, Any]]:
        return self.store.turns.page(self.scope(owner), session_id=session_id, limit=limit, order="asc")

    def list(self, *, owner: str | builtins.list[str] | None = None, agent: str | None = None,
             project: str | None = None, since: float | None = None, until: float | None = None,
             kind: str | None = None, limit: int = 50, offset: int = 0) -> builtins.list[dict[str, Any]]:
        return self.store.turns.page(self.scope(owner, agent=agent, project=project), since=since,
                                     until=until, kind=kind, limit=limit, offset=offset)

    def forget(self, *, ids: builtins.list[str] | None = None, session: str | None = None,
               source: str | None = None, owner: str | builtins.list[str] | None = None,
               keep_out: bool = True) -> builtins.list[str]:
        """Delete memories by id, by session or by source, with everything derived from them.

        ``keep_out`` (every face: CLI, API, MCP, viewer) leaves tombstones so no later sync,
        capture or import brings them back (``store.tombstones``): the forgotten turns; every turn
        of a forgotten session, also later ones; what a forgotten source held up to now.
        ``unforget`` (``remem forget --undo``) or an explicit re-add is the way back."""
        sc = self.scope(owner)
        store = self.store
        with store.transaction():
            if keep_out and ids is not None:
                store.tombstones.bury_turns(sc, ids)
            elif keep_out and (session is not None or source is not None):
                store.tombstones.bury(sc, "session" if session is not None else "source",
                                      str(session if session is not None else source))
            gone = store.turns.delete(sc, ids=ids, session_id=session, source=source)
            if gone and self.config.get("learn.enabled"):
                # the learned memories that cited them went with them (the m009 trigger); those with evidence
                # elsewhere come back from the turns that remain at the next learn: queue it now
                for o in sc.owners:
                    store.jobs.enqueue("learn", {"owner": o}, dedup_key=learn_key(o))
            if gone or (keep_out and ids is None):
                store.audit.record("forget", owner=",".join(sc.owners),
                                   target=ids and ",".join(ids[:20]) or session or source or "",
                                   detail={"count": len(gone), "keep_out": keep_out})
        if gone:
            self._forget_corpora()
        return gone

    def unforget(self, *, ids: builtins.list[str] | None = None, session: str | None = None,
                 source: str | None = None, owner: str | builtins.list[str] | None = None
                 ) -> builtins.list[dict[str, Any]]:
        """Lift tombstones (``remem forget --undo``): the next sync re-reads the sources they name
        and brings those turns back. Returns the tombstones lifted."""
        sc = self.scope(owner)
        store = self.store
        with store.transaction():
            lifted = store.tombstones.lift(sc, ids=ids, session_id=session, source=source)
            if lifted:
                store.audit.record("unforget", owner=",".join(sc.owners),
                                   target=ids and ",".join(ids[:20]) or session or source or "",
                                   detail={"count": len(lifted)})
        return lifted

    def tombstones(self, *, owner: str | builtins.list[str] | None = None) -> builtins.list[dict[str, Any]]:
        """What ``forget`` keeps out for these owners, newest first."""
        return self.store.tombstones.list(self.scope(owner))

    def _forget_corpora(self) -> None:
        """Deleted turns must leave recall's cached scope corpora and word counts at once (not after a rebuild)."""
        if self._recall is not None:
            self._recall.forget()

    def sessions(self, *, owner: str | builtins.list[str] | None = None, agent: str | None = None,
                 project: str | None = None, limit: int = 100, offset: int = 0) -> builtins.list[dict[str, Any]]:
        """Sessions in scope, most recently active first."""
        return self.store.turns.sessions(self.scope(owner, agent=agent, project=project), limit=limit,
                                         offset=offset)

    def clear_all(self) -> dict[str, int]:
        """Delete every memory, session, source watermark and job of this home (settings and token stay)."""
        with self.store.transaction():
            deleted = self.store.turns.clear()
            self.store.audit.record("clear", owner="*", detail=deleted)
        self._forget_corpora()
        self.store.maintenance.vacuum()  # when it cannot run now, space is reclaimed later; the data is gone
        return deleted

    def stats(self, *, owner: str | builtins.list[str] | None = None) -> dict[str, Any]:
        sc = self.scope(owner)
        out = self.store.turns.counts(sc)
        out["learned"] = sum(self.store.learned.count(sc).values())  # type: ignore[attr-defined]
        out["owners"] = list(sc.owners)
        out["vectors"] = self.store.vectors.stats()
        out["jobs_pending"] = self.store.jobs.pending()
        out["database_bytes"] = self.store.maintenance.size_bytes()
        out["home"] = str(self.home)
        return out

    # -- embeddings ------------------------------------------------------------------------
    def embedder(self) -> Any:
        """The configured embedder, loaded once; None (with ``embedder_error``) when unavailable."""
        made = False
        with self._lock:
            if self._embedder is None and not self._embedder_error:
                from .embed.embedders import get_embedder

                name = str(self.config.get("embedding.model"))
                opts: dict[str, Any] = {}
                if name == "openai":
                    opts = {"base_url": self.config.get("embedding.openai_base_url"),
                            "model": self.config.get("embedding.openai_model")}
                try:
                    self._embedder = get_embedder(name, **opts)
                    made = True
                except Exception as e:
                    self._embedder_error = f"{type(e).__name__}: {e}"
            emb = self._embedder
        if made and self._onnx_wanted:  # a model chosen while running gets onnxruntime too
            self.prepare_onnx()
        return emb

    def prepare_onnx(self, *, wait: bool = False, build: bool = True) -> str:
        """Let the embedder run on its faster runtime when it has one (e5-small on onnxruntime,
        built once into ``REMEM_HOME/models``). Long-lived processes call this (the daemon at
        start-up, the benchmarks, a large embedding backlog); a one-shot call embedding one query
        would spend more loading it than it saves. Returns "ready", "building" or why not used."""
        self._onnx_wanted = True
        if not self.config.get("embedding.enabled") or not self.config.get("embedding.onnx"):
            return "not used: turned off in settings"
        emb = self.embedder()
        prepare = getattr(emb, "prepare_onnx", None)
        if prepare is None:
            return "not used: the embedder has no faster runtime"
        # ``build`` only when asked not to: a plugin's embedder may not take it
        return str(prepare(self.home / "models", wait=wait) if build else prepare(self.home / "models", wait=wait,
                                                                                    build=False))

    @property
    def embedder_error(self) -> str:
        return self._embedder_error

    def warm(self) -> dict[str, Any]:
        """Load now what the first recall would otherwise load on an agent's clock (``RecallContext.warm``:
        the model and the vector indexes, 2–3 s at 100k turns). The daemon calls it at start-up."""
        self._recall_entries()
        return self.recall.warm()

    def reset_embedder(self) -> None:
        """Forget the loaded model; the next use loads what the config names now."""
        with self._lock:
            self._embedder, self._embedder_error = None, ""

    def embedder_status(self) -> dict[str, Any]:
        """What is configured, what is loaded (without loading it), and what waits for vectors."""
        from .embed.worker import backlog

        loaded = self._embedder
        model_id = getattr(loaded, "model_id", None) if loaded is not None else None
        # the backlog, the last measured turns per second and the ETA from it (None until measured)
        todo = backlog(self.store, self.embed_rate_file, model_id)
        enabled = bool(self.config.get("embedding.enabled"))
        if not enabled:
            todo["eta_seconds"] = None  # nothing embeds them
        return {"enabled": enabled,
                "configured": str(self.config.get("embedding.model")),
                "loaded": model_id, "runtime": getattr(loaded, "runtime", None), "error": self._embedder_error,
                **todo}

    @property
    def embed_rate_file(self) -> Path:
        from .embed.worker import RATE_FILE

        return self.home / RATE_FILE

    def index_pending(self, *, embed: bool = True, limit: int | None = None) -> dict[str, int]:
        """Run the background index work now: entities and trigram index backlog, then embeddings
        (``tasks.index`` and ``tasks.embed``, as the daemon's jobs run them)."""
        done = {"trigram": int(tasks.index(self)["indexed"]), "embedded": 0}
        if embed:
            done["embedded"] = self.embed_pending(limit=limit)
        return done

    def embed_pending(self, limit: int | None = None) -> int:
        """Embed turns waiting for vectors now (``tasks.embed``); 0 when embeddings are off or the
        model is unavailable (``embedder_error`` says why)."""
        try:
            return int(tasks.embed(self, limit=limit)["embedded"])
        except tasks.EmbedderUnavailable:
            return 0

    # -- export / import -------------------------------------------------------------------
    def export_jsonl(self, out: IO[str], *, owner: str | builtins.list[str] | None = None) -> int:
        sc = self.scope(owner)
        n = 0
        offset = 0
        while True:
            rows = self.store.turns.page(sc, limit=1000, offset=offset, order="asc")
            if not rows:
                break
            for r in rows:
                out.write(json.dumps({"type": "turn", "v": EXPORT_VERSION, **r}, ensure_ascii=False,
                                     sort_keys=True) + "\n")
                n += 1
            offset += len(rows)
        return n

    def export_sqlite(self, path: str | os.PathLike[str]) -> Path:
        """A consistent copy of the whole database (VACUUM INTO)."""
        dest = Path(path)
        if dest.exists():
            raise InputError(f"{dest} already exists")
        dest.parent.mkdir(parents=True, exist_ok=True)
        return Path(self.store.maintenance.copy_to(dest))

    def import_jsonl(self, lines: Iterable[str], *, owner: str | None = None) -> dict[str, Any]:
        """Import an export through the write pipeline (redaction, tombstones, entities, audit).
        Records keep their ids and times; importing twice adds nothing. A line that is not a turn
        record (bad JSON, too deeply nested, wrong field types) is counted as ``invalid``, its
        number listed in ``invalid_lines`` (the first 20), and the rest is imported. A file with
        no turn record at all is not an export: InputError naming its first bad line."""
        counts: dict[str, Any] = {"added": 0, "updated": 0, "duplicate": 0, "skipped_oversize": 0,
                                  "skipped_empty": 0, "skipped_forgotten": 0, "times_fixed": 0, "invalid": 0}
        bad: builtins.list[int] = []
        first_error = ""
        records = 0
        batch: builtins.list[tuple[TurnIn, dict[str, Any]]] = []
        now = time.time()
        default_owner = self.owner_for()
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                batch.append(import_record(json.loads(line), owner, default_owner))
                records += 1
            except (ValueError, TypeError, RecursionError, OverflowError) as e:
                counts["invalid"] += 1
                if len(bad) < 20:
                    bad.append(lineno)
                if not first_error:
                    why = "nested too deeply" if isinstance(e, RecursionError) else str(e)[:200]
                    first_error = f"line {lineno}: {why}"
                continue
            if len(batch) >= 500:
                self._import_batch(batch, counts, now)
                batch = []
        if batch:
            self._import_batch(batch, counts, now)
        if counts["invalid"] and not records:
            raise InputError(f"not a remem export: no line is a turn record ({first_error})")
        if bad:
            counts["invalid_lines"] = bad
        return counts

    def _import_batch(self, batch: builtins.list[tuple[TurnIn, dict[str, Any]]], counts: dict[str, Any],
                      now: float) -> None:
        res = self.add_turns([t for t, _ in batch], defer_index=True, preserve=[k for _, k in batch],
                             fallback_ts=now)
        for status, n in res.counts.items():
            counts[status] = counts.get(status, 0) + n

    # -- health ----------------------------------------------------------------------------
    def doctor(self, *, load_embedder: bool = True) -> dict[str, Any]:
        checks: dict[str, Any] = {}
        store = self.store
        ic = store.maintenance.quick_check()
        checks["integrity"] = {"ok": ic == "ok", "detail": ic}
        mode = store.maintenance.journal_mode()
        if store.engine == "sqlite":
            checks["wal"] = {"ok": mode == "wal", "detail": mode}
        else:  # a server keeps its own log
            facts = getattr(store.maintenance, "server_facts", None)
            checks["engine"] = {"ok": True, "detail": f"{store.engine} {store.url}" + (f" ({facts()})" if facts else "")}
        ok, detail = store.maintenance.text_index_check()
        checks["fts"] = {"ok": ok, "detail": detail}
        tok = self.config.token_path
        mode_bits = oct(tok.stat().st_mode & 0o777) if tok.exists() else "missing"
        checks["token"] = {"ok": mode_bits == "0o600", "detail": mode_bits}
        if load_embedder and self.config.get("embedding.enabled"):
            t0 = time.perf_counter()
            emb = self.embedder()
            checks["embedder"] = {"ok": emb is not None,
                                  "detail": (f"{emb.model_id} loaded in {time.perf_counter() - t0:.2f}s"
                                             if emb is not None else self.embedder_error)}
            if emb is not None and hasattr(emb, "onnx_state") and self.config.get("embedding.onnx"):
                checks["onnx"] = {"ok": True, "detail": emb.onnx_state(self.home / "models")}
        pending = store.turns.embed_backlog()
        failed_jobs = store.jobs.failed()
        checks["jobs"] = {"ok": failed_jobs == 0, "detail": f"{store.jobs.pending()} queued, "
                          f"{failed_jobs} failed, {pending} turns waiting for embeddings"}
        return {"ok": all(c["ok"] for c in checks.values()), "checks": checks}

    # -- learned memories (layers/service.py) ------------------------------------------------
    def learn(self, project: str | None = None, rebuild: bool = False, *,
              owner: str | builtins.list[str] | None = None) -> dict[str, Any]:
        """Learn preferences, conventions, decisions, procedures and facts from the stored turns
        now: every project in scope whose turns changed since its last learn (all with ``rebuild``)."""
        from .layers import service

        return service.run(self, self.scope(owner, project=project), rebuild=rebuild)

    def learned(self, project: str | None = None, status: str | None = "active", kind: str | None = None, *,
                owner: str | builtins.list[str] | None = None) -> builtins.list[dict[str, Any]]:
        """Learned memories in scope (``status`` one of the lifecycle states, "review" or "all")."""
        from .layers import service

        return service.listing(self, self.scope(owner, project=project), status=status, kind=kind)


def _same_packet(area: Any, rec: dict[str, Any], now: float) -> int | None:
    """The id of this session's record of the very same packet made moments ago, if there is one."""
    if not rec["session_id"]:
        return None
    for p in area.recent(Scope.of(rec["owner"]), session=rec["session_id"], limit=3):
        if now - float(p["created_at"]) > SAME_PACKET_SECONDS:
            break
        if all(p.get(k) == rec[k] for k in ("entry", "agent", "prompt_hash", "turn_ids", "learned_ids", "project")):
            return int(p["id"])
    return None


def iter_lines(fp: IO[bytes]) -> Iterator[str]:
    """The lines of an import file; a line that is not UTF-8 comes out as one no JSON parser takes
    (``import_jsonl`` counts it invalid and imports the rest)."""
    for raw in fp:
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as e:
            yield f"\ufffd not valid UTF-8 (byte {e.start})"


def open(home: str | os.PathLike[str] | None = None, **kw: Any) -> Remem:  # noqa: A001
    """Open (initialising if needed) the memory home: ``REMEM_HOME`` or ``~/.remem`` by default."""
    return Remem(home, **kw)
