"""A laptop's link to a team server (issue 17): ``remem team join URL --token T``, ``remem team sync``.

The laptop keeps its own SQLite for the hook path (fast, offline) and, when joined, syncs with the
server over its REST API as the token's user:

- **up**: the local turns of the projects shared with a team (``remem team project add PATH --team
  T``) are pushed to ``POST /api/v1/sync/push``; the server writes them as ``team:T``'s under a key
  derived from this home's id and the local turn's id, so a push repeated after a cut connection or a
  killed process adds nothing. The push cursor (the last pushed turn's ``updated_at`` and id) is
  saved after every acknowledged page: an interrupted sync resumes where the server last answered.
  A shared project's learned memories reach the team the way the server learns them: its learner
  runs on the team's turns.
- **down**: every team the user belongs to is pulled (``GET /api/v1/sync/turns``) into the local
  store under the owner ``team:T``, with the server's source keys, so a pulled turn has the server's
  id and pulling it twice is a duplicate; the server's forgets are forgotten here too. The team's
  learned memories (``GET /api/v1/sync/learned``) are mirrored as they are on the server: **the
  server's version wins**, except over a memory this laptop locked — that one is kept and the
  disagreement reported (``remem team status``). The local learner never learns a mirrored owner.
- **recall** on the laptop reads its own owner and the mirrored teams in one ranking
  (``Remem._read_as``: turn_start, session_start, repair, search).

Projects are named per machine (an absolute folder); a rule maps the local folder to the team's
name for it (default: the folder's name), pushed turns carry the team's name, and pulled turns and
memories of that name come back under the local folder, so ``turn_start(project=…)`` finds them.

Files (mode 0600, in REMEM_HOME): ``team.json`` (server URL, user, teams, this home's id, the
project rules), ``team-token`` (the token, like the home's ``token``) and ``team-state.json``
(cursors, the last result, the reported conflicts). Everything written is redacted first.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import RememError
from .team import TEAM_PREFIX, check_name, team_owner

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: syncs are not serialised
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from .core import Remem

LINK, TOKEN, STATE = "team.json", "team-token", "team-state.json"
OVERLAP = 120.0          # seconds re-read at the start of each pull: a server transaction that
#                          committed after a later one cannot hide behind the cursor
TIMEOUT = 30.0


class SyncError(RememError):
    """The server could not be reached, refused the token, or answered something unusable."""


# -- files -------------------------------------------------------------------------------------
def _write_private(path: Path, data: Any, *, raw: bool = False) -> None:
    """Write a JSON document redacted (the hooks' state writer: atomic, mode 0600), or the raw token."""
    from .integrations import state as files

    path.parent.mkdir(parents=True, exist_ok=True)
    if not raw:
        files.save(path, data)
        return
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(data)
    os.replace(tmp, path)


def _read(path: Path) -> dict[str, Any]:
    try:
        got = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise SyncError(f"{path.name} is unreadable ({e}); `remem team leave` and join again") from e
    return got if isinstance(got, dict) else {}


_cache: dict[str, tuple[float, dict[str, Any]]] = {}


def link(home: Path) -> dict[str, Any]:
    """This home's link to a team server ({} when not joined). Cached by the file's mtime: the hook
    path asks on every prompt."""
    path = home / LINK
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return {}
    hit = _cache.get(str(path))
    if hit is not None and hit[0] == mtime:
        return hit[1]
    got = _read(path)
    _cache[str(path)] = (mtime, got)
    return got


def mirrored_owners(home: Path) -> tuple[str, ...]:
    """The team owners this home mirrors from its server (read with the local owner in recall,
    never learned here)."""
    got = link(home)
    return tuple(team_owner(t) for t in got.get("teams") or [] if isinstance(t, str))


def _save_link(home: Path, data: dict[str, Any]) -> None:
    _write_private(home / LINK, data)
    _cache.pop(str(home / LINK), None)


def _token(home: Path) -> str:
    try:
        return (home / TOKEN).read_text(encoding="utf-8").strip()
    except OSError as e:
        raise SyncError("not joined to a team server (remem team join URL --token T)") from e


def state(home: Path) -> dict[str, Any]:
    return _read(home / STATE)


def _save_state(home: Path, data: dict[str, Any]) -> None:
    _write_private(home / STATE, data)


# -- the server ----------------------------------------------------------------------------------
def check_url(url: str) -> str:
    u = (url or "").strip().rstrip("/")
    parts = urllib.parse.urlsplit(u)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SyncError(f"not a server URL: {url!r} (use http://HOST:PORT or https://HOST)")
    if parts.username or parts.password:
        raise SyncError("the URL must not carry credentials: pass the token with --token")
    if parts.query or parts.fragment:
        raise SyncError("the URL must not carry a query or fragment")
    return u


class Remote:
    """The team server's REST API as the token's user (urllib: no client library is needed)."""

    def __init__(self, url: str, token: str, timeout: float = TIMEOUT) -> None:
        self.url, self._token, self.timeout = check_url(url), token.strip(), timeout

    def call(self, method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None) -> Any:
        q = ("?" + urllib.parse.urlencode(params)) if params else ""
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        req = urllib.request.Request(f"{self.url}/api/v1/{path}{q}", data=data, method=method, headers={
            "Authorization": f"Bearer {self._token}", "Accept": "application/json",
            **({"Content-Type": "application/json"} if data is not None else {})})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:  # noqa: S310 (http/https checked)
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                detail = json.loads(e.read() or b"{}").get("detail") or e.reason
            except ValueError:
                detail = e.reason
            if e.code == 401:
                raise SyncError(f"{self.url} refused the token (revoked or wrong): ask for a new one") from e
            raise SyncError(f"{self.url} answered {e.code} to {method} /api/v1/{path}: {detail}") from e
        except (urllib.error.URLError, OSError, ValueError) as e:
            reason = getattr(e, "reason", e)
            raise SyncError(f"cannot reach {self.url} ({reason}); nothing was lost: sync again later") from e


def remote(mem: Remem) -> Remote:
    """The team server this home joined, as its user (``remem team join``); SyncError if none."""
    return _remote(mem)


def _remote(mem: Remem) -> Remote:
    got = link(mem.home)
    if not got.get("url"):
        raise SyncError("not joined to a team server (remem team join URL --token T)")
    return Remote(got["url"], _token(mem.home), timeout=float(mem.config.get("team.timeout")))


# -- join, leave, rules ---------------------------------------------------------------------------
def join(mem: Remem, url: str, token: str, *, projects: dict[str, str] | None = None) -> dict[str, Any]:
    """Check the token against the server (``GET /api/v1/me``) and save the link; ``projects``:
    local folder → team, shared from now on (under the folder's name)."""
    home = mem.config.home
    remote = Remote(url, token, timeout=float(mem.config.get("team.timeout")))
    me = remote.call("GET", "me")
    if not isinstance(me, dict) or me.get("home") or not me.get("user"):
        raise SyncError("that is the server's home token: join with a user token (on the server: "
                        "remem team user add NAME)")
    old = link(home)
    data = {"url": remote.url, "user": me["user"], "teams": sorted(me.get("teams") or []),
            "home_id": old.get("home_id") if old.get("url") == remote.url and old.get("home_id")
            else secrets.token_hex(8),
            "projects": dict(old.get("projects") or {}) if old.get("url") == remote.url else {},
            "joined_at": time.time()}
    for path, team in (projects or {}).items():
        data["projects"][_project_key(path)] = _rule(data, team, None)
    _write_private(home / TOKEN, token.strip(), raw=True)
    _save_link(home, data)
    (home / LEFT).unlink(missing_ok=True)
    if old.get("url") and old.get("url") != remote.url:
        _save_state(home, {})   # another server: its cursors mean nothing here
    mem.store.audit.record("team_join", target=remote.url, detail={"user": data["user"], "teams": data["teams"]})
    return {"url": remote.url, "user": data["user"], "teams": data["teams"], "projects": data["projects"]}


def _project_key(path: str) -> str:
    p = (path or "").strip()
    if not p:
        raise SyncError("a project is its folder (or the name its turns carry)")
    return p.rstrip("/") or "/"


def _rule(data: dict[str, Any], team: str, name: str | None) -> dict[str, str]:
    team = check_name(team, "team name")
    if team not in (data.get("teams") or []):
        raise SyncError(f"user {data.get('user')} is not a member of team {team} on {data.get('url')} "
                        f"(its teams: {', '.join(data.get('teams') or []) or 'none'})")
    return {"team": team, "as": name or ""}


def add_project(mem: Remem, path: str, team: str, *, name: str | None = None) -> dict[str, Any]:
    """Share a local project with a team from now on: its turns (past ones too) go up at the next sync."""
    home = mem.config.home
    data = dict(link(home))
    if not data.get("url"):
        raise SyncError("not joined to a team server (remem team join URL --token T)")
    key = _project_key(path)
    rule = _rule(data, team, (name or "").strip() or None)
    data["projects"] = {**(data.get("projects") or {}), key: rule}
    _save_link(home, data)
    return {"project": key, "team": rule["team"], "as": team_project(key, rule)}


def remove_project(mem: Remem, path: str) -> bool:
    """Stop sharing a project (what the team has of it stays on the server)."""
    home = mem.config.home
    data = dict(link(home))
    projects = dict(data.get("projects") or {})
    if projects.pop(_project_key(path), None) is None:
        return False
    data["projects"] = projects
    _save_link(home, data)
    st = state(home)
    (st.get("push") or {}).pop(_project_key(path), None)
    _save_state(home, st)
    return True


LEFT = "team-left.json"   # the teams a home left without --forget: `remem team leave --forget` finds them


def leave(mem: Remem, *, forget: bool = False) -> dict[str, Any]:
    """Unlink this home from its server; ``forget`` also deletes the mirrored teams' turns and
    learned memories here (without tombstones: joining again brings them back) — also after a
    plain leave, whose teams are remembered for it. Kept, they are no longer recalled."""
    home = mem.config.home
    url = str(link(home).get("url") or "")
    joined = bool(url)
    left = _read(home / LEFT)
    owners = tuple(dict.fromkeys([*mirrored_owners(home), *(o for o in left.get("owners") or []
                                                            if isinstance(o, str) and o.startswith(TEAM_PREFIX))]))
    if not joined and not owners:
        return {"left": False, "forgotten": 0, "owners": []}
    gone = 0
    if forget and owners:
        gone = len(_drop_owners(mem, owners))
        (home / LEFT).unlink(missing_ok=True)
    elif owners:
        _write_private(home / LEFT, {"owners": list(owners), "url": url or left.get("url"),
                                     "left_at": time.time()})
    for name in (LINK, TOKEN, STATE):
        (home / name).unlink(missing_ok=True)
    _cache.pop(str(home / LINK), None)
    if joined:
        mem.store.audit.record("team_leave", target=url, detail={"forget": forget})
    return {"left": joined, "forgotten": gone, "owners": list(owners)}


def _drop_owners(mem: Remem, owners: tuple[str, ...]) -> list[str]:
    from .scope import Scope

    sc = Scope.of(list(owners))
    with mem.store.transaction():
        for rec in mem.store.learned.list(sc):  # type: ignore[attr-defined]
            mem.store.learned.delete(rec["owner"], rec["id"])  # type: ignore[attr-defined]
        ids = [r["id"] for r in _all_turns(mem, sc)]
        return mem.store.turns.delete(sc, ids=ids) if ids else []


def _all_turns(mem: Remem, sc: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    after = (0.0, "")
    while True:
        page = mem.store.turns.changed(sc, after=after, limit=1000)
        if not page:
            return out
        out += page
        after = (page[-1]["updated_at"], page[-1]["id"])


def team_project(local: str, rule: dict[str, Any]) -> str:
    """The team's name for a local project: the rule's ``as``, else the folder's last part."""
    return str(rule.get("as") or "") or (Path(local).name or local)


# -- sync -----------------------------------------------------------------------------------------
LOCK = "team-sync.lock"
LOCK_WAIT = 120.0        # seconds a sync waits for another one of this home (the daemon's, a CLI's)


@contextlib.contextmanager
def _one_at_a_time(home: Path, wait: float = LOCK_WAIT) -> Iterator[None]:
    """One sync of a home at a time (the daemon's scheduled one and ``remem team sync``): both would
    read and write the same cursors. The lock is the kernel's (``flock``): a killed sync holds none."""
    if fcntl is None:
        yield
        return
    home.mkdir(parents=True, exist_ok=True)
    fd = os.open(home / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise SyncError(f"another team sync of this home has run for over {wait:.0f} s; "
                                    "try again when it ends (remem team status)") from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)      # closing the descriptor releases the lock


def sync(mem: Remem, *, push: bool = True, pull: bool = True) -> dict[str, Any]:
    """Push the shared projects' new turns, then pull every team's; returns what moved. Each
    acknowledged page advances its saved cursor, so an interrupted sync resumes without loss, and
    every write is idempotent (stable keys), so a page sent twice adds nothing. One sync of a home
    runs at a time; a second waits for the first."""
    with _one_at_a_time(mem.config.home):
        try:
            return _sync(mem, push=push, pull=pull)
        except SyncError as e:       # kept for `remem status` / `remem team status`; nothing else changes
            st = state(mem.config.home)
            st["last_error"] = {"at": time.time(), "error": str(e)}
            _save_state(mem.config.home, st)
            raise


def summary(home: Path) -> dict[str, Any]:
    """The link at a glance, from the files alone (no database, no network): ``remem status``."""
    data = link(home)
    if not data.get("url"):
        return {"joined": False}
    try:
        st = state(home)
    except SyncError as e:
        st = {"last_error": {"error": str(e)}}
    return {"joined": True, "url": data["url"], "user": data.get("user"), "teams": data.get("teams") or [],
            "last": st.get("last"), "last_error": st.get("last_error"),
            "conflicts": len(st.get("conflicts") or []) + len(st.get("up_conflicts") or {})}


def _sync(mem: Remem, *, push: bool, pull: bool) -> dict[str, Any]:
    home = mem.config.home
    remote = _remote(mem)
    data = link(home)
    t0 = time.time()
    out: dict[str, Any] = {"url": remote.url, "user": data.get("user"), "pushed": {}, "pulled": {}, "learned": {},
                           "conflicts": []}
    me = remote.call("GET", "me")                 # the user's teams as they are now
    teams = sorted(me.get("teams") or []) if isinstance(me, dict) else []
    if teams != data.get("teams"):
        gone = sorted(set(data.get("teams") or []) - set(teams))
        if gone:      # removed from a team on the server: its memory is no longer this user's to read
            out["removed_from"] = {team_owner(t): len(_drop_owners(mem, (team_owner(t),))) for t in gone}
            st = state(home)
            for t in gone:
                (st.get("pull") or {}).pop(team_owner(t), None)
            st["conflicts"] = [c for c in st.get("conflicts") or [] if c.get("owner") not in out["removed_from"]]
            _save_state(home, st)
        data = {**data, "teams": teams}
        _save_link(home, data)
    if push:
        out["pushed"] = _push(mem, remote, data)
    if pull:
        for team in teams:
            owner = team_owner(team)
            out["pulled"][owner] = _pull_turns(mem, remote, data, owner)
            got, conflicts = _pull_learned(mem, remote, data, owner)
            out["learned"][owner] = got
            out["conflicts"] += conflicts
    st = state(home)
    st.pop("last_error", None)
    if pull:
        st["conflicts"] = out["conflicts"]
    out["conflicts"] = [*out["conflicts"], *(st.get("up_conflicts") or {}).values()]
    st["last"] = {"at": t0, "seconds": round(time.time() - t0, 3),
                  "pushed": sum(v.get("sent", 0) for v in out["pushed"].values()),
                  "pulled": sum(v.get("written", 0) for v in out["pulled"].values())}
    _save_state(home, st)
    mem.store.audit.record("team_sync", target=remote.url, detail=st["last"])
    return out


def _local_owners(mem: Remem, home: Path) -> list[str]:
    mirrored = set(mirrored_owners(home))
    return [o for o in mem.scope().owners if o not in mirrored and not o.startswith(TEAM_PREFIX)]


def _push(mem: Remem, remote: Remote, data: dict[str, Any]) -> dict[str, Any]:
    from .scope import Scope

    home = mem.config.home
    out: dict[str, Any] = {}
    owners = _local_owners(mem, home)
    forgotten = _push_forgets(mem, remote, data, owners)
    for local, rule in sorted((data.get("projects") or {}).items()):
        name, team = team_project(local, rule), rule["team"]
        if team not in (data.get("teams") or []):
            out[local] = {"team": team_owner(team), "as": name, "sent": 0,
                          "skipped": f"{data.get('user')} is no longer a member of team {team}"}
            continue
        st = state(home)
        cur = (st.get("push") or {}).get(local) or [0.0, ""]
        after = (float(cur[0]), str(cur[1]))
        counts: dict[str, Any] = {"sent": 0}
        sc = Scope.of(owners, project=local)
        while True:
            rows = mem.store.turns.changed(sc, after=after, limit=int(mem.config.get("team.push_batch")))
            if not rows:
                break
            body = {"team": team, "turns": [_wire(r, data["home_id"], name) for r in rows]}
            got = remote.call("POST", "sync/push", body=body)
            for k, v in (got.get("counts") or {}).items():
                counts[k] = counts.get(k, 0) + int(v)
            counts["sent"] += len(rows)
            after = (rows[-1]["updated_at"], rows[-1]["id"])
            st = state(home)   # saved after every acknowledged page: a kill -9 resumes here
            st.setdefault("push", {})[local] = list(after)
            _save_state(home, st)
        counts["learned"] = _push_learned(mem, remote, data, local, name, team, owners)
        counts["forgotten"] = forgotten.get(team, 0)
        out[local] = {"team": team_owner(team), "as": name, **counts}
    return out


def _push_forgets(mem: Remem, remote: Remote, data: dict[str, Any], owners: list[str]) -> dict[str, int]:
    """What the user forgot here since the last sync leaves the teams it was shared with: the
    server forgets the copies this user pushed (a forgotten turn's key, a forgotten session's turns).
    A tombstone carries no project, so every team a rule shares with is told; ids only, never text."""
    from .scope import Scope

    home = mem.config.home
    teams = sorted({r["team"] for r in (data.get("projects") or {}).values()} & set(data.get("teams") or []))
    if not teams or not owners:
        return {}
    st = state(home)
    since = float(st.get("push_forgets") or data.get("joined_at") or 0.0)
    gone = mem.store.tombstones.since(Scope.of(owners), since, limit=5000)
    if not gone:
        return {}
    turns = [f"{data['home_id']}:{g['turn_id']}" for g in gone if g.get("kind") == "turn" and g.get("turn_id")]
    sessions = [str(g["key"]) for g in gone if g.get("kind") == "session" and g.get("key")]
    out = {}
    for team in teams:
        got = remote.call("POST", "sync/forget", body={"team": team, "turns": turns, "sessions": sessions})
        out[team] = int(got.get("forgotten") or 0)
    st = state(home)
    st["push_forgets"] = max(float(g.get("created_at") or 0) for g in gone) + 1e-6   # each is told once
    _save_state(home, st)
    return out


def _curated(rec: dict[str, Any]) -> bool:
    """A learned memory the user decided on here: edited, locked, approved or written by hand."""
    return bool(rec.get("edited") or rec.get("locked") or rec.get("decided") == "active"
                or (rec.get("data") or {}).get("origin") == "user")


def _push_learned(mem: Remem, remote: Remote, data: dict[str, Any], local: str, name: str, team: str,
                  owners: list[str]) -> dict[str, int]:
    """Send the shared project's learned memories the user curated here since the last push; the team's
    learner derives the others from the pushed turns. What the server kept its own way is reported."""
    from .scope import Scope
    from .team import CURATED_KINDS

    home = mem.config.home
    st = state(home)
    since = float((st.get("push_learned") or {}).get(local) or 0.0)
    area = mem.store.learned  # type: ignore[attr-defined]
    rows = sorted((r for r in area.list(Scope.of(owners, project=local), statuses=("active",))
                   if _curated(r) and r.get("kind") in CURATED_KINDS and float(r.get("updated_at") or 0) > since),
                  key=lambda r: float(r.get("updated_at") or 0))   # oldest first: the cursor only moves on
    counts: dict[str, int] = {}
    for start in range(0, len(rows), 200):
        page = rows[start:start + 200]
        body = {"team": team, "items": [{
            "local_id": r["id"], "project": name, "kind": r["kind"], "text": r["text"], "slot": r.get("slot") or "",
            "value": r.get("value") or "", "edited": bool(r.get("edited")), "locked": bool(r.get("locked")),
            "evidence": [f"{data['home_id']}:{e['turn_id']}" for e in (r.get("evidence") or [])[:200]]}
            for r in page if r.get("text")]}
        if not body["items"]:
            continue
        got = remote.call("POST", "sync/learned", body=body)
        st = state(home)
        up = st.setdefault("up_conflicts", {})
        for res in got.get("results") or []:
            counts[res["status"]] = counts.get(res["status"], 0) + 1
            mine = next((r for r in page if r["id"] == res.get("local_id")), None)
            if res["status"] == "kept_server" and mine is not None:
                up[mine["id"]] = {"owner": team_owner(team), "id": res["id"], "local_id": mine["id"],
                                  "kept": "server (decided there)", "local": {"text": mine.get("text")},
                                  "server": res.get("server")}
            else:
                up.pop(str(res.get("local_id")), None)
        st.setdefault("push_learned", {})[local] = max(float(r.get("updated_at") or 0) for r in page)
        _save_state(home, st)
    return counts


def _wire(row: dict[str, Any], home_id: str, project: str) -> dict[str, Any]:
    return {"request": row.get("request") or "", "reply": row.get("reply") or "",
            "actions": [{k: a.get(k, d) for k, d in (("name", ""), ("input", ""), ("output", ""),
                                                     ("is_error", False), ("call_id", ""))}
                        for a in row.get("actions") or [] if isinstance(a, dict)],
            "agent": row.get("agent") or "unknown", "project": project, "session_id": row.get("session_id") or "",
            "source_key": f"{home_id}:{row['id']}", "status": row.get("status") or "succeeded",
            "started_at": row.get("started_at"), "ended_at": row.get("ended_at"), "model": row.get("model") or "",
            "tags": [t for t in row.get("tags") or [] if not str(t).startswith("shared-by:")],
            "summary": row.get("summary") or "", "importance": float(row.get("importance") or 0.5)}


def _local_project(data: dict[str, Any], team: str, name: str) -> str:
    """The local folder a team project name maps to (the rule that shares it), else the name."""
    for local, rule in (data.get("projects") or {}).items():
        if rule.get("team") == team and team_project(local, rule) == name:
            return str(local)
    return name


def _pull_turns(mem: Remem, remote: Remote, data: dict[str, Any], owner: str) -> dict[str, Any]:
    from .model import ToolCall, TurnIn

    home, team = mem.config.home, owner[len(TEAM_PREFIX):]
    st = state(home)
    cur = (st.get("pull") or {}).get(owner) or {}
    after = (max(0.0, float((cur.get("after") or [0.0])[0]) - OVERLAP), "") if cur.get("after") else (0.0, "")
    forgotten_since = max(0.0, float(cur.get("forgotten_since") or 0.0) - OVERLAP)
    own_prefix = f"sync:{data.get('user')}:{data.get('home_id')}:"
    counts: dict[str, int] = {"written": 0, "forgotten": 0, "own": 0}
    first = True
    while True:
        page = remote.call("GET", "sync/turns", params={
            "owner": owner, "after_ts": repr(after[0]), "after_id": after[1],
            "forgotten_since": repr(forgotten_since) if first else "-1"})
        items = page.get("items") or []
        if first:
            gone = [g for g in page.get("forgotten") or [] if isinstance(g, dict)]
            counts["forgotten"] += _forget_here(mem, owner, gone)
            if gone:
                forgotten_since = max(float(g.get("created_at") or 0) for g in gone)
        turns = []
        for r in items:
            if str(r.get("source_key") or "").startswith(own_prefix):
                counts["own"] += 1     # this laptop's own turn, back from the team: it has it already
                continue
            turns.append(TurnIn(
                request=r.get("request") or "", reply=r.get("reply") or "", owner=owner,
                actions=[ToolCall(name=a.get("name", ""), input=a.get("input", ""), output=a.get("output", ""),
                                  is_error=bool(a.get("is_error")), call_id=a.get("call_id", ""))
                         for a in r.get("actions") or [] if isinstance(a, dict)],
                agent=r.get("agent") or "unknown", project=_local_project(data, team, r.get("project") or ""),
                session_id=r.get("session_id") or "", source_key=r["source_key"], status=r.get("status") or "succeeded",
                started_at=r.get("started_at"), ended_at=r.get("ended_at"), model=r.get("model") or "",
                tags=list(r.get("tags") or []), summary=r.get("summary") or "",
                importance=float(r.get("importance") or 0.5), kind=r.get("kind") or "turn"))
        if turns:
            res = mem.add_turns(turns, learn=False)
            for k, v in res.counts.items():
                counts[k] = counts.get(k, 0) + int(v)
            counts["written"] += res.counts.get("added", 0) + res.counts.get("updated", 0)
        nxt = page.get("next") or [after[0], after[1]]
        after = (float(nxt[0]), str(nxt[1]))
        st = state(home)   # after every written page: a kill -9 resumes here (a re-read page is duplicates)
        st.setdefault("pull", {})[owner] = {**((st.get("pull") or {}).get(owner) or {}), "after": list(after),
                                            "forgotten_since": forgotten_since}
        _save_state(home, st)
        first = False
        if not page.get("more"):
            return counts


def _forget_here(mem: Remem, owner: str, gone: list[dict[str, Any]]) -> int:
    """The server forgot these turns or sessions of the team: forget them here, and keep them out."""
    ids = [str(g["turn_id"]) for g in gone if g.get("kind") == "turn" and g.get("turn_id")]
    n = len(mem.forget(ids=ids, owner=owner)) if ids else 0
    for g in gone:
        if g.get("kind") == "session" and g.get("key"):
            n += len(mem.forget(session=str(g["key"]), owner=owner))
    return n


_CONTENT = ("text", "status", "kind", "slot", "value", "decided", "stale", "polarity", "evidence")
_COMPARED = (*_CONTENT, "locked", "edited")


def _pull_learned(mem: Remem, remote: Remote, data: dict[str, Any], owner: str
                  ) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Mirror the team's learned memories: the server's version wins, except over one this laptop
    locked whose content the server changed (kept, and reported as a conflict until the user
    unlocks it here). While a conflict stands every pull compares all the team's memories, so an
    unlock is followed by the server's version at the next sync."""
    from .scope import Scope

    home, team = mem.config.home, owner[len(TEAM_PREFIX):]
    st = state(home)
    cur = (st.get("pull") or {}).get(owner) or {}
    standing = [c for c in st.get("conflicts") or [] if c.get("owner") == owner]
    since = 0.0 if standing else max(0.0, float(cur.get("learned_after") or 0.0) - OVERLAP)
    got = remote.call("GET", "sync/learned", params={"owner": owner, "after": repr(since)})
    server_ids = dict(got.get("ids") or {})
    area = mem.store.learned  # type: ignore[attr-defined]
    here = {r["id"]: r for r in area.list(Scope.of(owner))}
    counts = {"updated": 0, "removed": 0, "kept_locked": 0}
    conflicts: list[dict[str, Any]] = []
    now = time.time()
    newest = float(cur.get("learned_after") or 0.0)
    with mem.store.transaction():
        for rec in got.get("items") or []:
            rec = {**rec, "owner": owner, "project": _local_project(data, team, rec.get("project") or "")}
            newest = max(newest, float(rec.get("updated_at") or 0))
            mine = here.get(rec["id"])
            if mine is not None and mine.get("locked"):
                if any(mine.get(k) != rec.get(k) for k in _CONTENT):
                    counts["kept_locked"] += 1
                    conflicts.append(_conflict(owner, mine, rec))
                continue          # locked here and unchanged there: the lock stays, nothing to say
            if mine is not None and all(mine.get(k) == rec.get(k) for k in _COMPARED):
                continue
            area.put(rec)
            area.add_event(owner, rec["id"], "sync", mine, rec, actor=f"team-sync:{remote.url}", ts=now)
            counts["updated"] += 1
        for mid, mine in here.items():
            if mid in server_ids:
                continue
            if mine.get("locked"):
                counts["kept_locked"] += 1
                conflicts.append(_conflict(owner, mine, None))
                continue
            area.delete(owner, mid)
            area.add_event(owner, mid, "sync_remove", mine, None, actor=f"team-sync:{remote.url}", ts=now)
            counts["removed"] += 1
    st = state(home)
    st.setdefault("pull", {}).setdefault(owner, {})["learned_after"] = newest
    _save_state(home, st)
    return counts, conflicts


def _conflict(owner: str, mine: dict[str, Any], theirs: dict[str, Any] | None) -> dict[str, Any]:
    return {"owner": owner, "id": mine["id"], "kept": "local (locked here)",
            "local": {"text": mine.get("text"), "status": mine.get("status")},
            "server": None if theirs is None else {"text": theirs.get("text"), "status": theirs.get("status")}}


def status(mem: Remem) -> dict[str, Any]:
    """The link, the rules, what waits to go up, the last sync and the reported conflicts (no network)."""
    from .scope import Scope

    home = mem.config.home
    data = link(home)
    if not data.get("url"):
        return {"joined": False}
    st = state(home)
    waiting = {}
    owners = _local_owners(mem, home)
    for local in data.get("projects") or {}:
        cur = (st.get("push") or {}).get(local) or [0.0, ""]
        waiting[local] = mem.store.turns.count_changed(Scope.of(owners, project=local),
                                                       after=(float(cur[0]), str(cur[1])))
    return {"joined": True, "url": data["url"], "user": data.get("user"), "teams": data.get("teams") or [],
            "projects": {k: {"team": v["team"], "as": team_project(k, v)} for k, v in (data.get("projects") or {}).items()},
            "waiting": waiting, "last": st.get("last"), "last_error": st.get("last_error"),
            "conflicts": [*(st.get("conflicts") or []), *(st.get("up_conflicts") or {}).values()]}
