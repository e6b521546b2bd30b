"""A real-shaped home for the learned-memory tests: four sessions of one web project (Claude Code
shaped tool calls, kilobytes of install and test output, a pasted stack trace, Chinese), a
"use bun, not npm" preference said in two sessions, an error → fix across turns, and a second
project and owner that must never show up in the first one's scope."""

from __future__ import annotations

import json

from remem.model import ToolCall, TurnIn

DAY = 86400.0
T0 = 1_760_000_000.0
PROJECT = "shop-web"

_INSTALL = "\n".join(f"+ {name}@{i}.{i % 7}.{i % 3}" for i, name in enumerate(
    ["react", "react-dom", "next", "zod", "@supabase/supabase-js", "tailwindcss", "postcss", "eslint",
     "typescript", "@types/node", "@types/react", "vitest", "happy-dom", "clsx", "date-fns"] * 12)) + \
    "\n\n180 packages installed [2.31s]"
_FAIL = ("bun test v1.1.29\n\nsrc/cart/total.test.ts:\n"
         + "\n".join(f"✓ cart › adds item {i} [0.{i:02d}ms]" for i in range(40))
         + "\n✗ cart › applies the coupon [1.20ms]\n\n"
         "error: expect(received).toBe(expected)\n\nExpected: 90\nReceived: 100\n\n"
         "      at <anonymous> (src/cart/total.test.ts:48:25)\n\n"
         " 40 pass\n 1 fail\n 41 expect() calls\nRan 41 tests across 1 files. [88.00ms]\n")
_PASS = ("bun test v1.1.29\n\nsrc/cart/total.test.ts:\n"
         + "\n".join(f"✓ cart › adds item {i} [0.{i:02d}ms]" for i in range(41))
         + "\n\n 41 pass\n 0 fail\n 41 expect() calls\nRan 41 tests across 1 files. [91.00ms]\n")
_TRACE = "\n".join(["TypeError: Cannot read properties of undefined (reading 'price')"]
                   + [f"    at computeTotal (/app/src/cart/total.ts:{20 + i}:{i + 3})" for i in range(30)])


def bash(command: str, output: str, error: bool = False) -> ToolCall:
    return ToolCall(name="Bash", input=json.dumps({"command": command, "description": "run"}), output=output,
                    is_error=error)


def edit(path: str) -> ToolCall:
    return ToolCall(name="Edit", input=json.dumps({"file_path": path, "old_string": "a", "new_string": "b"}),
                    output="The file has been updated.")


def turns(owner: str = "default") -> list[TurnIn]:
    """The home's turns, in time order."""
    rows: list[tuple[str, float, str, str, list[ToolCall]]] = [
        ("s1", 0, "Set up the cart page. Use bun, not npm, for installing and running everything.",
         "I installed the dependencies with bun and added the cart page.",
         [bash("bun install", _INSTALL), edit("src/cart/page.tsx"), edit("src/cart/total.ts")]),
        ("s1", 600, "The coupon total is wrong, fix it.",
         "The test fails: the coupon is applied after tax.",
         [bash("bun test", _FAIL, error=True), edit("src/cart/total.ts")]),
        ("s1", 1200, "ok try again",
         "Applying the coupon before tax fixes it; all tests pass now.",
         [edit("src/cart/total.ts"), bash("bun test", _PASS)]),
        ("s2", DAY, "本项目前端使用 Next.js 15 和 Supabase。这个报错怎么回事？\n" + _TRACE,
         "total.ts 里 items 可能为空，我加了判断。",
         [edit("src/cart/total.ts"), bash("bun test", _PASS)]),
        ("s2", DAY + 900, "use bun not npm, please remember that. npm keeps breaking the lockfile.",
         "Understood, I will use bun for installs and scripts.",
         [bash("bun install", _INSTALL), bash("bun test", _PASS)]),
        ("s3", 2 * DAY, "以后提交前都要先跑 bun test，不要跳过。",
         "好的，以后提交前我都会先运行 bun test。",
         [bash("bun test", _PASS), bash("git commit -m 'cart: coupon before tax'", "[main 3f2a1c9] cart")]),
        ("s4", 3 * DAY, "add a checkout button to the cart page",
         "Added the checkout button and a test for it.",
         [edit("src/cart/page.tsx"), bash("bun test", _PASS)]),
    ]
    out = []
    for i, (sess, dt, req, reply, actions) in enumerate(rows):
        out.append(TurnIn(request=req, reply=reply, actions=actions, owner=owner, agent="claude-code",
                          project=PROJECT, session_id=sess, source_key=f"{owner}:{sess}:{i}",
                          source_name="claude-code", started_at=T0 + dt, ended_at=T0 + dt + 60,
                          message_ids=[f"{owner}-m{i}"]))
    return out


def other_turns() -> list[TurnIn]:
    """Another owner in the same project and the same owner's other project: never in scope."""
    out = []
    for i in range(3):
        out.append(TurnIn(request="Use pnpm, not bun, in this repo. Always pnpm.", reply="ok",
                          actions=[bash("pnpm install", _INSTALL)], owner="bob", agent="codex", project=PROJECT,
                          session_id=f"b{i}", source_key=f"bob:{i}", started_at=T0 + i * DAY,
                          ended_at=T0 + i * DAY + 30, message_ids=[f"bob-m{i}"]))
        out.append(TurnIn(request="Use yarn, not npm, in this repo. Always yarn.", reply="ok",
                          actions=[bash("yarn install", _INSTALL)], owner="default", agent="codex",
                          project="other-app", session_id=f"o{i}", source_key=f"other:{i}",
                          started_at=T0 + i * DAY, ended_at=T0 + i * DAY + 30, message_ids=[f"o-m{i}"]))
    return out


def seed(mem, *, others: bool = True) -> list[str]:
    """Write the home's turns; returns the ids of the main project's turns in time order."""
    ids = [r.id for r in mem.add_turns(turns()).results]
    if others:
        mem.add_turns(other_turns())
    return ids
