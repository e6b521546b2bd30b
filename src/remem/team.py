"""Team use (issue 17): users with tokens of their own, teams of users, whose owners a request may
read and write, and explicit sharing of a turn with a team.

Owners: a user's private memory is ``user:NAME``; a team's shared memory is ``team:TEAM``. A request
made with a user's token acts as that user: it reads its own owner and the owners of the teams it
belongs to, and writes only to its own. The home's token (``REMEM_HOME/token``) is the machine's
owner and administrator and keeps reading and writing every owner as before.

Tokens are shown once and stored only as hashes (``token_hash``: sha256 of a 256-bit secret, so a
plain hash is enough; no salt or slow hash is needed for a secret nobody chose). The viewer's cookie of
a user token is the same HMAC the home token's cookie is (``server.security.session_value``), stored
as its sha256 too, so the server can recognise either without ever holding the token.

Everything here is pure (no store, no HTTP) except ``share_turn``, which goes through ``Remem``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import RememError

if TYPE_CHECKING:
    from .core import Remem
    from .store.protocols import WriteStore

USER_PREFIX = "user:"
TEAM_PREFIX = "team:"
TOKEN_PREFIX = "rmu_"  # a user token says what it is (secret scanners and people can tell it from the home token)
NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")  # fits an owner, a URL and a shell word unquoted
SESSION_SALT = b"remem-viewer-session-v1"       # the same derivation as server.security.session_value


class TeamError(RememError, ValueError):
    """A bad user or team name, an unknown user or team, a name already taken."""


class NotFound(LookupError, RememError):
    """No memory of that id in the sharer's own scope (REST: 404, LookupError first in the MRO)."""


class OwnerRefused(RememError, PermissionError):
    """A user's request named an owner it may not read or write (the REST API answers 403)."""


def check_name(name: str, what: str = "name") -> str:
    """A user or team name as stored, or TeamError saying what a name may be."""
    n = (name or "").strip()
    if not NAME.fullmatch(n):
        raise TeamError(f"invalid {what} {name!r}: use 1-63 lowercase letters, digits, '.', '_' or '-', "
                        "starting with a letter or digit")
    return n


def user_owner(name: str) -> str:
    return USER_PREFIX + name


def team_owner(name: str) -> str:
    return TEAM_PREFIX + name


def new_token() -> str:
    """A fresh user token: 256 bits from the OS, printed once."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """What the store keeps of a token (and what a request's token is looked up by)."""
    return hashlib.sha256(token.strip().encode()).hexdigest()


def session_of(token: str) -> str:
    """The viewer cookie of ``token`` (``server.security.session_value``)."""
    return hmac.new(token.encode(), SESSION_SALT, hashlib.sha256).hexdigest()


def session_hash(token: str) -> str:
    """What the store keeps of a token's viewer cookie."""
    return token_hash(session_of(token))


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request acts as. ``user`` None is the home token: every owner, as before teams."""

    user: str | None = None
    teams: tuple[str, ...] = ()

    @property
    def is_home(self) -> bool:
        return self.user is None

    @property
    def owner(self) -> str | None:
        return user_owner(self.user) if self.user is not None else None

    @property
    def readable(self) -> tuple[str, ...]:
        """The owners this user reads: its own first (packets and writes go there), then its teams'."""
        if self.user is None:
            return ()
        return (user_owner(self.user), *(team_owner(t) for t in self.teams))

    def reads(self, asked: str | list[str] | None) -> str | list[str] | None:
        """The owners a read covers: what was asked (checked), or every owner this user reads.
        Asking for an owner outside them is refused, never quietly narrowed or widened."""
        if self.user is None:
            return asked
        if not asked:
            return list(self.readable)
        wanted = [asked] if isinstance(asked, str) else list(asked)
        refused = [o for o in wanted if o not in self.readable]
        if refused:
            raise OwnerRefused(f"user {self.user} may not read {', '.join(refused)} "
                               f"(readable: {', '.join(self.readable)})")
        return asked

    def writes(self, asked: str | None) -> str | None:
        """The owner a write goes to: the user's own (asking for any other is refused)."""
        if self.user is None:
            return asked
        own = user_owner(self.user)
        if asked and asked != own:
            raise OwnerRefused(f"user {self.user} writes only to {own}, not {asked}"
                               + ("; share a turn with `remem share ID --team T` instead"
                                  if asked.startswith(TEAM_PREFIX) else ""))
        return own

    def shares_to(self, team: str) -> str:
        """The team owner a share goes to, if this user may share with that team."""
        name = check_name(team, "team name")
        if self.user is not None and name not in self.teams:
            raise OwnerRefused(f"user {self.user} is not a member of team {name}")
        return team_owner(name)


# -- administration (the CLI on the server's machine; the home token's holder) --------------------
def add_user(store: WriteStore, name: str) -> str:
    """Create a user; its token, to be shown once (only its hashes are stored)."""
    name = check_name(name, "user name")
    token = new_token()
    if not store.users.add_user(name, token_hash(token), session_hash(token)):
        raise TeamError(f"user {name} exists already")
    store.audit.record("user_add", target=name)
    return token


def new_user_token(store: WriteStore, name: str, *, replace: bool = False) -> tuple[str, int]:
    """Another token for an existing user, to be shown once; ``replace`` revokes its others (a
    rotation). Returns the token and how many were revoked."""
    name = check_name(name, "user name")
    token = new_token()
    with store.transaction():
        if not store.users.user_exists(name):
            raise TeamError(f"no user {name}")
        store.users.add_token(name, token_hash(token), session_hash(token))
        revoked = store.users.revoke_tokens(name, keep=token_hash(token)) if replace else 0
        store.audit.record("user_token", target=name, detail={"revoked": revoked})
    return token, revoked


def remove_user(store: WriteStore, name: str) -> None:
    """Remove a user and revoke its tokens (its memories stay until forgotten)."""
    name = check_name(name, "user name")
    if not store.users.remove_user(name):
        raise TeamError(f"no user {name}")
    store.audit.record("user_remove", target=name)


def _members(store: WriteStore, members: list[str]) -> list[str]:
    names = list(dict.fromkeys(check_name(m, "user name") for m in members))
    missing = store.users.missing_users(names)
    if missing:
        raise TeamError(f"no user {', '.join(missing)} (add it first: remem team user add NAME)")
    return names


def add_team(store: WriteStore, name: str, members: list[str]) -> dict[str, Any]:
    """Create a team with its members; every name is checked before anything is written."""
    name = check_name(name, "team name")
    names = _members(store, members)
    if not store.users.add_team(name, names):
        raise TeamError(f"team {name} exists already (add members: remem team member add {name} NAME)")
    store.audit.record("team_add", target=name, detail={"members": names})
    return {"team": name, "owner": team_owner(name), "members": names}


def remove_team(store: WriteStore, name: str) -> None:
    name = check_name(name, "team name")
    if not store.users.remove_team(name):
        raise TeamError(f"no team {name}")
    store.audit.record("team_remove", target=name)


def change_members(store: WriteStore, team: str, members: list[str], *, add: bool) -> int:
    """Add (or remove) members of an existing team; how many memberships changed."""
    team = check_name(team, "team name")
    if not store.users.team_exists(team):
        raise TeamError(f"no team {team}")
    names = _members(store, members)
    n = store.users.add_members(team, names) if add else store.users.remove_members(team, names)
    store.audit.record("team_members", target=team, detail={"added" if add else "removed": names})
    return n


def principal_of(store: WriteStore, *, token: str = "", cookie: str = "") -> Principal | None:
    """The user a request's bearer token (or viewer cookie) belongs to, with its teams as they are
    now; None when the token is unknown or revoked."""
    user = (store.users.user_of(token_hash=token_hash(token)) if token else
            store.users.user_of(session_hash=token_hash(cookie)) if cookie else None)
    if user is None:
        return None
    return Principal(user=user, teams=tuple(store.users.teams_of(user)))


def share_key(turn_id: str) -> str:
    """The source key of a turn's shared copy: sharing it again (with the same team) changes nothing,
    and the copy's id is derived from the team and the original id (``t_`` + sha(owner, key))."""
    return f"share:{turn_id}"


def team_target(mem: Remem, principal: Principal, team: str) -> str:
    """The team owner ``principal`` may write to: one of a user's teams (they come from the store), or
    for the home any team that exists."""
    target = principal.shares_to(team)
    if principal.is_home and not mem.store.users.team_exists(target[len(TEAM_PREFIX):]):
        raise TeamError(f"no team {target[len(TEAM_PREFIX):]}")
    return target


def _share_ends(mem: Remem, principal: Principal, team: str, owner: str | None) -> tuple[str, str]:
    """(the owner shared from, the team owner shared to): a user shares its own with its teams; the
    home shares ``owner``'s (default: the configured owner) with any team that exists."""
    target = team_target(mem, principal, team)
    if principal.is_home:
        return mem.owner_for(None, owner), target
    source = principal.writes(owner)
    assert source is not None
    return source, target


def share_turn(mem: Remem, turn_id: str, team: str, *, principal: Principal,
               owner: str | None = None) -> dict[str, Any]:
    """Copy one of the principal's own turns to a team it belongs to, through the one write path.

    A copy (not a move): the sharer keeps its private turn as it was, forgetting one does not
    forget the other, and the team's copy gets a stable id of its own, so sharing twice adds nothing.
    The home token shares a turn of ``owner`` (default: the configured owner) to any existing team."""
    from .model import ToolCall, TurnIn

    source, target = _share_ends(mem, principal, team, owner)
    row = mem.get(turn_id, owner=source)
    if row is None:
        raise NotFound(f"no memory {turn_id} of {source}")
    actions = [ToolCall(name=a.get("name", ""), input=a.get("input", ""), output=a.get("output", ""),
                        is_error=bool(a.get("is_error")), call_id=a.get("call_id", ""))
               for a in row.get("actions") or [] if isinstance(a, dict)]
    tags = sorted({*(row.get("tags") or []), f"shared-by:{source}"})
    turn = TurnIn(request=row.get("request") or "", reply=row.get("reply") or "", actions=actions,
                  owner=target, agent=row.get("agent") or "unknown", project=row.get("project") or "",
                  session_id=row.get("session_id") or "", source_key=share_key(turn_id),
                  status=row.get("status") or "succeeded", started_at=row.get("started_at"),
                  ended_at=row.get("ended_at"), model=row.get("model") or "", tags=tags,
                  importance=float(row.get("importance") or 0.5), summary=row.get("summary") or "")
    res = mem.add_turns([turn], revive=True)
    got = res.results[0]
    mem.store.audit.record("share", owner=source, target=turn_id, detail={"team": target, "copy": got.id})
    return {"id": turn_id, "team": target, "shared_id": got.id, "status": got.status}


def share_learned(mem: Remem, memory_id: str, team: str, *, principal: Principal,
                  owner: str | None = None) -> dict[str, Any]:
    """Share an active learned memory with a team: its supporting evidence turns are shared (copies,
    as ``share_turn``) and the team's learner runs on that project now, so the team holds the memory
    as the team's own (the same id: it is derived from project, kind and key), earned from evidence
    the team can read. Not a copy of the row: the team's learner owns the ``team:`` owner's learned
    memories and would recompute or drop a row whose evidence it cannot see. An edit or lock of the
    sharer's memory does not carry over (the team curates its own)."""
    from .layers import service
    from .scope import Scope

    source, target = _share_ends(mem, principal, team, owner)
    rec = mem.store.learned.get(Scope.of(source), memory_id)  # type: ignore[attr-defined]
    if rec is None or rec.get("status") != "active":
        raise NotFound(f"no active learned memory {memory_id} of {source}")
    turn_ids = [e["turn_id"] for e in rec.get("evidence") or [] if not e.get("against")]
    shared = [share_turn(mem, tid, team, principal=principal, owner=owner)
              for tid in turn_ids if mem.get(tid, owner=source) is not None]
    service.run(mem, Scope.of(target, project=rec.get("project") or None))
    got = mem.store.learned.get(Scope.of(target), memory_id)  # type: ignore[attr-defined]
    return {"id": memory_id, "team": target, "shared_turns": [s["shared_id"] for s in shared],
            "learned": None if got is None else {"id": got["id"], "status": got["status"], "text": got["text"]}}


def share(mem: Remem, memory_id: str, team: str, *, principal: Principal, owner: str | None = None
          ) -> dict[str, Any]:
    """``remem share ID --team T`` and ``POST /api/v1/share``: a learned memory (``m_…``) or a turn."""
    fn = share_learned if memory_id.startswith("m_") else share_turn
    return fn(mem, memory_id, team, principal=principal, owner=owner)


# -- the server's side of a laptop's sync (``remem team join``, ``remem.teamsync``) ----------------
SYNC_PAGE = 500          # turns per pull page (a page of real turns is a few MB of JSON at most)


def sync_key(principal: Principal, key: str) -> str:
    """The source key of a pushed turn on the server: namespaced by the pushing user, so one user's
    keys cannot land on (or dedup against) another's, and a re-push of the same key is a duplicate."""
    who = principal.user if principal.user is not None else "home"
    return f"sync:{who}:{key}"


def receive_push(mem: Remem, principal: Principal, team: str, turns: list[Any]) -> dict[str, Any]:
    """``POST /api/v1/sync/push``: a laptop's turns of a project it shares with ``team``, written as
    the team's through the one write path (redaction, dedup, indexes) with a stable key each, so a
    push repeated after a cut connection or a killed process adds nothing. A turn the team forgot
    stays forgotten (no revive)."""
    target = team_target(mem, principal, team)
    by = principal.owner or "home"
    for t in turns:
        if not t.source_key:
            raise TeamError("every pushed turn needs its source_key (the laptop's stable id)")
        t.source_key = sync_key(principal, t.source_key)
        t.owner = target
        t.tags = sorted({*t.tags, f"shared-by:{by}"})
    res = mem.add_turns(turns, live=False)
    mem.store.audit.record("sync_push", owner=target, target=by, detail=res.counts)
    return {"team": target, "results": [r.to_dict() for r in res.results], "counts": res.counts}


def _one_owner(principal: Principal, owner: str) -> str:
    """The one owner a sync read asks for, if ``principal`` may read it."""
    asked = principal.reads(owner)
    if not isinstance(asked, str) or not asked:
        raise TeamError("sync reads one owner at a time (owner=team:NAME)")
    return asked


def changes(mem: Remem, principal: Principal, owner: str, *, after: tuple[float, str], forgotten_since: float,
            limit: int = SYNC_PAGE) -> dict[str, Any]:
    """``GET /api/v1/sync/turns``: one page of a readable owner's turns changed after ``after``
    (whole rows, with their source keys, so the laptop's copy gets the same id), the turns and
    sessions it forgot since ``forgotten_since``, and the cursor of the next page."""
    from .scope import Scope

    asked = _one_owner(principal, owner)
    scope = Scope.of(asked)
    rows = mem.store.turns.changed(scope, after=after, limit=max(1, min(limit, SYNC_PAGE)))
    gone = mem.store.tombstones.since(scope, forgotten_since) if forgotten_since >= 0 else []
    nxt = [rows[-1]["updated_at"], rows[-1]["id"]] if rows else [after[0], after[1]]
    return {"owner": asked, "items": rows, "next": nxt, "more": len(rows) >= max(1, min(limit, SYNC_PAGE)),
            "forgotten": gone}


def learned_state(mem: Remem, principal: Principal, owner: str, *, after: float) -> dict[str, Any]:
    """``GET /api/v1/sync/learned``: every learned memory id of a readable owner with its last change,
    and the whole records (evidence included) of those changed at or after ``after``."""
    from .scope import Scope

    asked = _one_owner(principal, owner)
    rows = mem.store.learned.list(Scope.of(asked))  # type: ignore[attr-defined]
    return {"owner": asked, "ids": {r["id"]: r.get("updated_at") for r in rows},
            "items": [r for r in rows if float(r.get("updated_at") or 0) >= after]}


#: what a laptop's curated learned memory may carry up (``POST /api/v1/sync/learned``)
CURATED_KINDS = ("preference", "convention", "decision", "procedure", "fact", "skill", "record")


def receive_learned(mem: Remem, principal: Principal, team: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """``POST /api/v1/sync/learned``: the learned memories a member curated on a laptop (edited,
    locked, approved or written by hand) in a project shared with ``team``. Each lands on the team's
    memory that says the same (same kind and slot = value, the same words, or the same evidence),
    else as a new locked memory written by that user. **The server's decisions win**: a team memory
    already edited or locked on the server with other words is kept, and reported back as a conflict.
    Evidence is mapped to the server's copies of the laptop's pushed turns."""
    from .ingest.pipeline import turn_id
    from .ingest.redact import redact
    from .layers import service
    from .layers.exchange import new_id
    from .layers.select import sameness
    from .scope import Scope

    target = team_target(mem, principal, team)
    by = principal.owner or "home"
    actor = f"team-sync:{by}"
    area = mem.store.learned  # type: ignore[attr-defined]
    out: list[dict[str, Any]] = []
    now = time.time()
    with mem.store.transaction():
        for item in items:
            kind, project = str(item.get("kind") or ""), str(item.get("project") or "")
            text = " ".join(str(item.get("text") or "").split())
            if kind not in CURATED_KINDS or not text or not project:
                raise TeamError(f"a learned memory needs kind (one of {', '.join(CURATED_KINDS)}), text and project")
            keys = [sync_key(principal, str(k)) for k in item.get("evidence") or []]
            have = mem.store.turns.get_many(Scope.of(target), [turn_id(target, k) for k in keys]) if keys else {}
            evidence = [{"turn_id": tid, "session_id": row.get("session_id") or "", "against": False}
                        for tid, row in have.items()]
            theirs = area.list(Scope.of(target, project=project), kind=kind)
            mine = {"kind": kind, "slot": item.get("slot") or "", "value": item.get("value") or "", "text": text}
            ev_ids = {e["turn_id"] for e in evidence}
            match = next((r for r in theirs if sameness(r) == sameness(mine)), None) or next(
                (r for r in theirs if ev_ids and ev_ids & {e["turn_id"] for e in r.get("evidence") or []}
                 and (r.get("slot") or "") == mine["slot"]), None)
            sc = Scope.of(target, project=project)
            local = str(item.get("local_id") or "")
            if match is None:
                mid = new_id(target, project, kind, text)
                rec = {"owner": target, "id": mid, "project": project, "layer": "L3" if kind == "fact" else "L2",
                       "kind": kind, "slot": mine["slot"], "value": mine["value"], "text": redact(text).text,
                       "status": "active", "confidence": 1.0, "sessions": len({e["session_id"] for e in evidence}),
                       "turns": len(evidence), "locked": True, "edited": bool(item.get("edited")),
                       "decided": "active", "polarity": 1, "scope": "project",
                       "data": {"origin": "user", "shared_by": by}, "stale": 0, "created_at": now,
                       "updated_at": now, "superseded_by": "", "evidence": evidence}
                area.put(rec)
                area.add_event(target, mid, "created", None, service.view(rec), actor=actor, ts=now)
                out.append({"local_id": local, "id": mid, "status": "created"})
                continue
            overruled = match.get("decided") not in (None, "", "active")      # rejected, archived, deleted there
            if overruled or ((match.get("locked") or match.get("edited")) and match.get("text") != text):
                out.append({"local_id": local, "id": match["id"], "status": "kept_server",
                            "server": {"text": match.get("text"), "status": match.get("status")}})
                continue
            done = []
            if item.get("edited") and match.get("text") != text:
                service.act_in(mem, sc, match["id"], "edit", text=text, actor=actor)
                done.append("edited")
            elif item.get("locked") and not match.get("locked"):
                service.act_in(mem, sc, match["id"], "lock", actor=actor)
                done.append("locked")
            if match.get("status") == "candidate":
                service.act_in(mem, sc, match["id"], "approve", actor=actor)
                done.append("approved")
            out.append({"local_id": local, "id": match["id"], "status": "+".join(done) or "unchanged"})
    if out:
        mem.store.audit.record("sync_learned", owner=target, target=by,
                               detail={s: sum(1 for o in out if o["status"] == s) for s in {o["status"] for o in out}})
    return {"team": target, "results": out}


def receive_forget(mem: Remem, principal: Principal, team: str, *, turns: list[str],
                   sessions: list[str]) -> dict[str, Any]:
    """``POST /api/v1/sync/forget``: what a member forgot on the laptop leaves the team too — only the
    copies that member pushed (``turns``: the laptop's keys; ``sessions``: session ids, of which only
    that member's pushed turns go). Forgotten with tombstones: a later push of the same key stays out,
    and the other laptops forget them at their next pull."""
    from .ingest.pipeline import turn_id
    from .scope import Scope

    target = team_target(mem, principal, team)
    ids = {turn_id(target, sync_key(principal, k)) for k in turns if k}
    mine = sync_key(principal, "")
    for sid in {s for s in sessions if s}:
        rows = mem.store.turns.page(Scope.of(target), session_id=sid, limit=5000)
        ids |= {r["id"] for r in rows if str(r.get("source_key") or "").startswith(mine)}
    have = mem.store.turns.get_many(Scope.of(target), sorted(ids)) if ids else {}
    gone = mem.forget(ids=sorted(have), owner=target) if have else []
    if gone:
        mem.store.audit.record("sync_forget", owner=target, target=principal.owner or "home",
                               detail={"turns": len(gone)})
    return {"team": target, "forgotten": len(gone)}
