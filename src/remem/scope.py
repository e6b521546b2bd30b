"""Scope: which owners (and optionally which agent and project) a read may see.

Every repository read takes a Scope and adds ``Scope.sql()`` to its WHERE clause. A scope
with no owners is invalid: there is no way to read memory without naming whose it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from .agents import canonical_agent
from .errors import RememError


class ScopeError(RememError, ValueError):
    """A scope that would read nothing or everything by accident."""


@dataclass(frozen=True, slots=True)
class Scope:
    owners: tuple[str, ...]
    agent: str | None = None
    project: str | None = None

    def __post_init__(self) -> None:
        if not self.owners or any(not isinstance(o, str) or not o for o in self.owners):
            raise ScopeError("a scope needs at least one owner")

    @classmethod
    def of(cls, owner: str | list[str] | tuple[str, ...], agent: str | None = None,
           project: str | None = None) -> Scope:
        owners = (owner,) if isinstance(owner, str) else tuple(owner)
        return cls(owners=tuple(dict.fromkeys(owners)),
                   agent=canonical_agent(agent) if agent else None,
                   project=project or None)

    def sql(self, alias: str = "", *, by_key: bool = False) -> tuple[str, list[str]]:
        """The predicate (``owner IN (…) AND …``) and its parameters for table ``alias``.

        ``by_key`` marks the columns with SQLite's unary ``+`` so a lookup by primary key is not
        planned as a scan of the owner index (the filter still applies to every row).
        """
        p = ("+" if by_key else "") + (f"{alias}." if alias else "")
        marks = ",".join("?" * len(self.owners))
        clause = f"{p}owner IN ({marks})"
        params: list[str] = list(self.owners)
        if self.agent:
            clause += f" AND {p}agent = ?"
            params.append(self.agent)
        if self.project:
            clause += f" AND {p}project = ?"
            params.append(self.project)
        return clause, params

    def allows(self, owner: str, agent: str = "", project: str = "") -> bool:
        """The same predicate in Python, for rows that did not come from SQL."""
        if owner not in self.owners:
            return False
        if self.agent and agent != self.agent:
            return False
        return not (self.project and project != self.project)
