"""A real-shaped history for the decay tests: a Python API project worked on in three sessions, then
left for more than a year while other work went on, then picked up again — a package-manager
preference said early and restated late, a test command run only early, a convention said once, a
working state per session — and another owner's turns in the same project."""

from __future__ import annotations

from learned_data import bash, edit
from remem.model import TurnIn

DAY = 86400.0
T0 = 1_700_000_000.0
PROJECT = "api-server"
PASS = ("============================= test session starts ==============================\n"
        "platform linux -- Python 3.12.1, pytest-8.0.0\ncollected 42 items\n\n"
        "tests/test_api.py " + "." * 42 + "  [100%]\n\n"
        "============================== 42 passed in 1.20s ===============================")


def _turn(owner: str, sess: str, day: float, req: str, reply: str, actions: list, i: int) -> TurnIn:
    return TurnIn(request=req, reply=reply, actions=actions, owner=owner, agent="claude-code", project=PROJECT,
                  session_id=sess, source_key=f"{owner}:{sess}:{i}", source_name="claude-code",
                  started_at=T0 + day * DAY, ended_at=T0 + day * DAY + 60, message_ids=[f"{owner}-{sess}-{i}"])


EARLY = [
    ("a1", 0, "Always use uv, not pip, for installing packages in this repo.", "Installed the dependencies with uv.",
     [bash("uv sync", "Resolved 40 packages in 12ms"), bash("uv run pytest", PASS)]),
    ("a1", 0.01, "Add a health endpoint at /healthz", "Added the endpoint and a test.",
     [edit("src/api/health.py"), bash("uv run pytest", PASS)]),
    ("a2", 1, "Add a users table migration", "Done.",
     [edit("migrations/2023_11_15_users.py"), bash("uv run pytest", PASS)]),
    ("a3", 2, "Never commit the .env file, always keep secrets in .env.example placeholders.", "Noted.",
     [edit(".env.example")]),
]
LATER = [(f"b{k}", 400 + k, f"Add the invoices endpoint part {k}", "Added it.", [edit(f"src/api/invoices_{k}.py")])
         for k in range(6)]
LATER.append(("b5", 405.02, "use uv not pip, please remember that.", "Sure, uv it is.",
              [bash("uv sync", "Resolved 41 packages in 10ms")]))
AGAIN = [("c1", 406, "Run the tests before the release", "All green.", [bash("uv run pytest", PASS)])]


def turns(rows: list, owner: str = "default", start: int = 0) -> list[TurnIn]:
    return [_turn(owner, *r, start + i) for i, r in enumerate(rows)]


def seed_early(mem) -> list[str]:
    ids = [r.id for r in mem.add_turns(turns(EARLY)).results]
    mem.add_turns(turns(EARLY, owner="bob"))
    return ids


def seed_later(mem) -> list[str]:
    return [r.id for r in mem.add_turns(turns(LATER, start=100)).results]


def seed_again(mem) -> list[str]:
    return [r.id for r in mem.add_turns(turns(AGAIN, start=200)).results]


def one(mem, pred, status: str = "all", owner: str | None = None) -> dict:
    got = [m for m in mem.learned(project=PROJECT, status=status, owner=owner) if pred(m)]
    assert len(got) == 1, [(m["kind"], m["status"], m["text"][:60]) for m in mem.learned(status="all")]
    return got[0]
