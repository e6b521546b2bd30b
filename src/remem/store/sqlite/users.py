"""``store.users``: the server's users, their tokens (hashes only) and teams (migration ``m014_team``).

The SQL is shared with PostgreSQL (``store/postgres/areas.py``). Nothing here is scoped by owner: these
rows say who may read which owners (``remem.team``), they hold no memory. Every change is one
transaction: a command that fails halfway leaves nothing written.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .db import guarded

if TYPE_CHECKING:
    from . import SqliteStore


@guarded
class SqliteUsers:
    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    @property
    def _db(self) -> Any:
        return self._store.conn

    # -- users and tokens --
    def add_user(self, name: str, token_hash: str, session_hash: str, now: float | None = None) -> bool:
        """A new user with its first token; False (nothing written) when the name is taken."""
        now = now or time.time()
        with self._store.transaction():
            if self.user_exists(name):
                return False
            self._db.execute("INSERT INTO users (name, created_at) VALUES (?, ?)", (name, now))
            self._db.execute("INSERT INTO user_tokens (token_hash, session_hash, user_name, created_at) "
                             "VALUES (?,?,?,?)", (token_hash, session_hash, name, now))
        return True

    def add_token(self, name: str, token_hash: str, session_hash: str, now: float | None = None) -> None:
        """Another token of an existing user (inside the caller's transaction when there is one)."""
        self._db.execute("INSERT INTO user_tokens (token_hash, session_hash, user_name, created_at) "
                         "VALUES (?,?,?,?)", (token_hash, session_hash, name, now or time.time()))

    def revoke_tokens(self, name: str, *, keep: str = "") -> int:
        """Delete a user's tokens except the one whose hash is ``keep``; how many were revoked."""
        return int(self._db.execute("DELETE FROM user_tokens WHERE user_name = ? AND token_hash <> ?",
                                    (name, keep)).rowcount or 0)

    def remove_user(self, name: str) -> bool:
        """Drop a user, its tokens (revoked at once: every request looks its token up) and memberships.
        Its memories stay (owner ``user:NAME``) until forgotten."""
        with self._store.transaction():
            self._db.execute("DELETE FROM user_tokens WHERE user_name = ?", (name,))
            self._db.execute("DELETE FROM team_members WHERE user_name = ?", (name,))
            return int(self._db.execute("DELETE FROM users WHERE name = ?", (name,)).rowcount or 0) > 0

    def user_exists(self, name: str) -> bool:
        return self._db.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone() is not None

    def users(self) -> list[dict[str, Any]]:
        """Every user with its teams and how many tokens it holds (never the hashes)."""
        out = []
        for r in self._db.execute("SELECT name, created_at FROM users ORDER BY name").fetchall():
            name = r[0]
            tokens = self._db.execute("SELECT count(*) FROM user_tokens WHERE user_name = ?", (name,)).fetchone()[0]
            out.append({"name": name, "created_at": r[1], "teams": self.teams_of(name), "tokens": int(tokens)})
        return out

    def user_of(self, *, token_hash: str = "", session_hash: str = "") -> str | None:
        """The user a token (or a viewer cookie) belongs to, by its hash; None when unknown or revoked."""
        if token_hash:
            r = self._db.execute("SELECT user_name FROM user_tokens WHERE token_hash = ?", (token_hash,)).fetchone()
        elif session_hash:
            r = self._db.execute("SELECT user_name FROM user_tokens WHERE session_hash = ?",
                                 (session_hash,)).fetchone()
        else:
            return None
        return str(r[0]) if r else None

    # -- teams --
    def add_team(self, name: str, members: list[str], now: float | None = None) -> bool:
        """A new team with its first members; False (nothing written) when the name is taken.
        Members must be users already (the caller checks; ``missing_users`` says which are not)."""
        now = now or time.time()
        with self._store.transaction():
            if self.team_exists(name):
                return False
            self._db.execute("INSERT INTO teams (name, created_at) VALUES (?, ?)", (name, now))
            for m in members:
                self._db.execute("INSERT OR IGNORE INTO team_members (team, user_name, added_at) VALUES (?,?,?)",
                                 (name, m, now))
        return True

    def remove_team(self, name: str) -> bool:
        """Drop a team and its memberships; its shared memories stay (owner ``team:NAME``)."""
        with self._store.transaction():
            self._db.execute("DELETE FROM team_members WHERE team = ?", (name,))
            return int(self._db.execute("DELETE FROM teams WHERE name = ?", (name,)).rowcount or 0) > 0

    def team_exists(self, name: str) -> bool:
        return self._db.execute("SELECT 1 FROM teams WHERE name = ?", (name,)).fetchone() is not None

    def add_members(self, team: str, members: list[str], now: float | None = None) -> int:
        now = now or time.time()
        n = 0
        with self._store.transaction():
            for m in members:
                n += int(self._db.execute("INSERT OR IGNORE INTO team_members (team, user_name, added_at) "
                                          "VALUES (?,?,?)", (team, m, now)).rowcount or 0)
        return n

    def remove_members(self, team: str, members: list[str]) -> int:
        n = 0
        with self._store.transaction():
            for m in members:
                n += int(self._db.execute("DELETE FROM team_members WHERE team = ? AND user_name = ?",
                                          (team, m)).rowcount or 0)
        return n

    def missing_users(self, names: list[str]) -> list[str]:
        return [n for n in names if not self.user_exists(n)]

    def teams(self) -> list[dict[str, Any]]:
        out = []
        for r in self._db.execute("SELECT name, created_at FROM teams ORDER BY name").fetchall():
            members = [m[0] for m in self._db.execute(
                "SELECT user_name FROM team_members WHERE team = ? ORDER BY user_name", (r[0],)).fetchall()]
            out.append({"name": r[0], "created_at": r[1], "members": members})
        return out

    def teams_of(self, user: str) -> list[str]:
        return [r[0] for r in self._db.execute(
            "SELECT team FROM team_members WHERE user_name = ? ORDER BY team", (user,)).fetchall()]
