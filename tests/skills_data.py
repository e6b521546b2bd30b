"""A real-shaped history for the skills tests (tests/test_skills.py, tests/test_viewer_learned.py):
three sessions of one Python service where pytest fails on a missing table, the migration is applied
and the tests pass, and a lint → type check → test sequence runs after each change; and the helpers
that write it into a store and try the learned skill once."""

from __future__ import annotations

from learned_data import bash
from remem.layers.types import Action, Turn
from remem.model import TurnIn

PROJECT = "billing-api"
DAY = 86400.0
T0 = 1_760_000_000.0
FILES = ("tests/test_invoices.py", "tests/test_refunds.py", "tests/test_payouts.py")
MODULES = ("src/billing/api", "src/billing/models", "src/billing/jobs")
ERROR = "sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) no such table: invoices"


def failing(path: str) -> str:
    return ("============================= test session starts ==============================\n"
            "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0\nrootdir: /srv/billing-api\n"
            f"collected 12 items\n\n{path} F...........\n\n"
            "=================================== FAILURES ===================================\n"
            "_________________________________ test_create __________________________________\n\n"
            + "".join(f"    def helper_{i}(session):\n        return session.execute(text('select {i}'))\n"
                      for i in range(20))
            + f"E   {ERROR}\n\n"
            f"FAILED {path}::test_create - sqlalchemy.exc.OperationalError\n"
            "========================= 1 failed, 11 passed in 0.81s =========================\n")


def passing(path: str) -> str:
    return (f"collected 12 items\n\n{path} ............                                   [100%]\n\n"
            "============================== 12 passed in 0.62s ==============================\n")


UPGRADE = ("INFO  [alembic.runtime.migration] Context impl SQLiteImpl.\n"
           "INFO  [alembic.runtime.migration] Will assume non-transactional DDL.\n"
           "INFO  [alembic.runtime.migration] Running upgrade  -> 3f2a9c1d, invoices and refunds\n")


def sh(command: str, output: str, status: str = "") -> Action:
    return Action(tool="shell", command=command, output=output, status=status)


def history() -> list[Turn]:
    """Three sessions: the fix (failure, migration, passing run) and the check sequence after an edit."""
    out = []
    for k, (path, module) in enumerate(zip(FILES, MODULES, strict=True)):
        s, at = f"s{k + 1}", T0 + k * DAY
        out.append(Turn(id=f"{s}-1", session=s, project=PROJECT, ts=at, index=1,
                        request=f"{path} fails, can you fix it?",
                        reply="The table is missing because the migration was not applied; after "
                              "`alembic upgrade head` the tests pass.",
                        actions=[sh(f"pytest {path} -q", failing(path)), sh("alembic upgrade head", UPGRADE),
                                 sh(f"pytest {path} -q", passing(path))]))
        out.append(Turn(id=f"{s}-2", session=s, project=PROJECT, ts=at + 600, index=2,
                        request="add a currency column to the invoice model and check everything",
                        reply="Added the column; lint, types and tests are clean.",
                        actions=[Action(tool="edit", path=f"{module}/invoice.py", output="updated"),
                                 sh("ruff check src", "All checks passed!"),
                                 sh(f"mypy {module}", "Success: no issues found in 14 source files"),
                                 sh("pytest -q", passing("tests"))]))
    return out


def turn_in(t: Turn, i: int) -> TurnIn:
    calls = []
    for a in t.actions:
        if a.tool == "shell":
            calls.append(bash(a.command, a.output, error=a.status == "failed"))
        else:
            from learned_data import edit

            calls.append(edit(a.path))
    return TurnIn(request=t.request, reply=t.reply, actions=calls, owner="default", agent="claude-code",
                  project=PROJECT, session_id=t.session, source_key=f"default:{t.id}", started_at=t.ts,
                  ended_at=(t.ts or 0) + 60, message_ids=[f"m-{t.id}"])


def live(m, session: str, request: str, actions: list, at: float) -> None:
    m.add_turns([TurnIn(request=request, reply="done", actions=actions, owner="default", agent="claude-code",
                        project=PROJECT, session_id=session, started_at=at, ended_at=at + 5)])


def try_skill(m, session: str, at: float, ok: bool) -> dict:
    """One packet with the skill, the agent using it, the user's next message."""
    path = "tests/test_credits.py"
    got = m.turn_start(f"pytest fails:\n{ERROR}", project=PROJECT, session=session)
    live(m, session, f"pytest fails:\n{ERROR}",
          [bash(f"pytest {path} -q", failing(path), error=True), bash("alembic upgrade head", UPGRADE),
           bash(f"pytest {path} -q", passing(path) if ok else failing(path), error=not ok)], at)
    live(m, session, "thanks, now add the credit note endpoint" if ok else "it still fails, look again",
          [], at + 30)
    return got
