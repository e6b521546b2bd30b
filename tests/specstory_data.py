"""A synthesized SpecStory project for the learning benchmarks' tests: SpecStory's export format (user and
assistant headers, `---` separators, a bash block with its output) and two sessions that run the tests
with bun, so the learner has a test command to find."""

from __future__ import annotations

from pathlib import Path

PASS = "\n".join(f"✓ cart › adds item {i} [0.{i:02d}ms]" for i in range(30)) + "\n\n 30 pass\n 0 fail\n"


def turn(request: str, reply: str, command: str = "") -> str:
    """One exported turn: the request, the reply and, with ``command``, a bash block that passed."""
    out = f"_**User**_\n\n{request}\n\n---\n\n_**Assistant**_\n\n{reply}\n\n"
    if command:
        out += f"---\n\n```bash\n{command}\n```\n\n```\n{PASS}\n```\n\n"
    return out + "---\n\n"


def two_sessions(raw: Path) -> None:
    """Two sessions (April 1st and 2nd) in ``raw``, each running ``bun test`` twice."""
    raw.mkdir(parents=True, exist_ok=True)
    for day, name, task in ((1, "cart-totals", "fix the cart total rounding"),
                            (2, "coupon-rules", "make expired coupons fail validation")):
        (raw / f"2025-04-0{day}_10-00-{name}.md").write_text(
            "# session\n\n" + turn(f"please {task}", f"Done: {task}; tests pass.", "bun test")
            + turn(f"now add a test for {name}", f"Added a {name} test.", f"bun test src/{name}"), encoding="utf-8")
