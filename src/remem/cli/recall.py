"""``remem recall``: print exactly what an agent would receive before it answers a prompt."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from ..ingest.normalize import InputError, decode_bytes
from . import count, emit, handle_errors, open_mem

ENTRIES = ("turn_start", "sub_agent", "repair", "resume")


@click.command()
@click.argument("prompt")
@click.option("--owner", default=None, help="Owner (profile) to read; default from config.")
@click.option("--agent", default=None, help="Read as this agent (its owner and read_owners).")
@click.option("--project", default=None, help="The project the agent works in (its memories rank higher; "
              "resume: where it left off). resume defaults to the working directory when remem holds its work.")
@click.option("--budget", default=None, type=click.IntRange(800, 4000), help="Token budget (default from config).")
@click.option("--entry", type=click.Choice(ENTRIES), default="turn_start", show_default=True,
              help="Entry point: turn_start, sub_agent, repair (PROMPT = the error), resume.")
@click.option("--session", default=None, help="resume: the episode to show in full (owner/agent/session_id).")
@click.option("--explain", is_flag=True, help="After the packet, show why each item was chosen.")
@click.option("--as", "as_agent", default=None, metavar="AGENT",
              help="Read as AGENT's hooks do (the same as --agent); the JSON items are escaped for an agent.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as JSON.")
@click.pass_context
@handle_errors
def recall(ctx: click.Context, prompt: str, owner: str | None, agent: str | None, project: str | None,
           budget: int | None, entry: str, session: str | None, explain: bool, as_agent: str | None,
           as_json: bool) -> None:
    """Show the memory packet an agent would get for PROMPT ("-" reads stdin)."""
    from ..recall.gate import NOT_CLOSE

    if prompt == "-":
        prompt = decode_bytes(sys.stdin.buffer.read())
    if not prompt.strip():
        raise InputError("prompt is empty")
    if as_agent:
        if owner:
            raise click.UsageError("--as reads as an agent; it cannot be combined with --owner")
        if agent and agent != as_agent:
            raise click.UsageError("--as and --agent name different agents")
        agent = as_agent
    home = ctx.ensure_object(dict).get("home")
    got = _turn_start_daemon(home, prompt, owner, agent, project, budget) if entry == "turn_start" else None
    if got is not None:
        res = got
    elif entry == "turn_start":
        mem = open_mem(ctx)
        res = mem.turn_start(prompt, owner=owner, agent=agent, project=project, budget=budget)
    else:
        mem = open_mem(ctx)
        if entry == "sub_agent":
            res = mem.sub_agent(prompt, owner=owner, agent=agent, project=project, budget=budget)
        elif entry == "repair":
            res = mem.repair(prompt, owner=owner, agent=agent, budget=budget)
        else:
            if project is None and not session:
                project = _cwd_project(mem, owner, agent)
            res = mem.resume(prompt, owner=owner, agent=agent, session=session, budget=budget, project=project)

    def human(r: dict[str, Any]) -> None:
        if not r["text"]:
            click.echo(f"(no memories for this prompt{': ' + r['skipped'] if r.get('skipped') else ''})", err=True)
        else:
            click.echo(r["text"])
        if explain:
            click.echo(f"\n-- {count(len(r['items']), 'item')}, {r.get('tokens', 0)} of {r.get('budget')} tokens", err=True)
            for i, it in enumerate(r["items"], 1):
                d = it.get("details") or {}
                chans = ", ".join(f"{n}#{v.get('rank')}" for n, v in d.get("channels", {}).items())
                boosts = ", ".join(f"{n}×{v}" for n, v in d.get("boosts", {}).items())
                cov = (d.get("evidence") or {}).get("coverage")
                words = f" word coverage {cov}" if cov is not None else ""
                if d.get("matched") is not None:
                    words += f" words matched: {', '.join(d['matched']) or '(none)'}"
                click.echo(f"{i}. {it.get('id', it.get('session'))} score={it.get('score')} [{chans}] {boosts}{words}",
                           err=True)
            for name, st in (r.get("stats") or {}).items():
                if not st.get("available", True):
                    click.echo(f"   channel {name} skipped: {st.get('reason')}", err=True)
                elif str(st.get("reason", "")).startswith(NOT_CLOSE):
                    click.echo(f"   channel {name}: {st['reason']}", err=True)  # the packet's vector gate

    if as_agent and as_json:
        from ..agent_text import safe_tree

        # the packet text is already rendered for an agent; the items carry raw memory text
        res = {**res, "items": safe_tree(res.get("items") or [])}
    emit(res, as_json, human)


def _turn_start_daemon(home: str | None, prompt: str, owner: str | None, agent: str | None,
                       project: str | None, budget: int | None) -> dict[str, Any] | None:
    """The running daemon's turn-start packet for PROMPT (its warm embedder and caches), or None.
    The owners and the budget are this CLI's (its config and environment), as the direct path
    would take them."""
    from .. import config as configmod
    from ..agents import canonical_agent
    from .memory import owner_param, read_owners
    from .via_daemon import ask

    if agent and not owner:
        try:
            canonical_agent(agent)
        except ValueError:
            return None          # the direct path says what is wrong with the name
    owners = owner or (read_owners(home, agent, None) if agent else None)
    want = int(budget or configmod.load(home).get("recall.token_budget"))
    got = ask(home, "POST", "/recall/turn-start", {"prompt": prompt, "owner": owner_param(home, owners),
                                                   "agent": agent, "project": project, "budget": want})
    if not isinstance(got, dict) or not isinstance(got.get("text"), str) or not isinstance(got.get("items"), list):
        return None
    got.pop("took_ms", None)     # the daemon's timing; a direct packet has none
    return got


COMMANDS = [recall]


def _cwd_project(mem: Any, owner: str | None, agent: str | None) -> str | None:
    """The working directory as the project, when remem holds work the agents did there (the project
    they record is the directory they ran in): `remem recall 继续 --entry resume` inside a project says
    where its work stopped, as the agent's own hook would."""
    try:
        cwd = os.getcwd()
    except OSError:       # the directory is gone
        return None
    return cwd if mem.list(owner=owner, agent=agent, project=cwd, limit=1) else None
