"""Agent integration commands: ``remem hook AGENT EVENT`` and ``remem hooks install|remove|status``."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from . import emit, fail, handle_errors, open_mem


@click.command("hook", context_settings={"ignore_unknown_options": True})
@click.argument("agent")
@click.argument("event")
@click.pass_context
def hook(ctx: click.Context, agent: str, event: str) -> None:
    """Run one agent hook: JSON on stdin, the agent's answer on stdout, always exit 0.

    Agents are wired to the lighter ``python -m remem.hook AGENT EVENT`` by ``remem hooks
    install``; this command does the same through the full CLI (for manual tests).
    """
    from ..hook import read_input, stdin_seconds
    from ..integrations.runtime import no_input, run

    home = ctx.obj.get("home")
    seconds = stdin_seconds(os.environ, home)
    data = read_input(sys.stdin, seconds)
    out = run(agent, event, data, home=home) if data is not None else no_input(agent, event, seconds, home=home)
    if out:
        click.echo(out)


@click.group("hooks")
def hooks() -> None:
    """Install, remove or inspect remem's hooks, plugins and skills in your agents."""


def _targets(ctx: click.Context, agents: tuple[str, ...]) -> list[str]:
    from ..integrations import detected_agents

    if agents:
        return list(agents)
    found = detected_agents()
    if not found:
        fail("no supported agent detected on this machine; name one (e.g. `remem hooks install codex`)")
    return found


def _print_result(r: dict[str, Any]) -> None:
    verb = {"install": "installed into", "remove": "removed from"}[r["action"]]
    if r["status"] == "error":
        click.echo(f"{r['agent']}: error: {r['error']}", err=True)
        return
    n = len(r["changed"]) + len(r["removed"])
    state = f"{verb} {r['agent']}" if n else f"{r['agent']}: already {'up to date' if r['action'] == 'install' else 'clean'}"
    click.echo(f"remem {state}" if n else state)
    for p in r["changed"]:
        click.echo(f"  wrote    {p}")
    for p in r["removed"]:
        click.echo(f"  removed  {p}")
    for p in r["backups"]:
        click.echo(f"  backup   {p}")
    for note in r["notes"]:
        if not note.startswith("question:"):
            click.echo(f"  note: {note}")


@hooks.command("install")
@click.argument("agents", nargs=-1)
@click.option("--replace/--no-replace", default=None,
              help="OpenClaw / Hermes: take over (or leave) a memory slot held by another plugin. Default: ask.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def install_cmd(ctx: click.Context, agents: tuple[str, ...], replace: bool | None, as_json: bool) -> None:
    """Install into AGENTS (default: every agent detected here). Safe to run again."""
    from ..integrations import install

    mem = open_mem(ctx)
    results = []
    for agent in _targets(ctx, agents):
        r = install(mem, agent, replace=replace)
        if r["status"] == "needs_confirmation" and not as_json and sys.stdin.isatty():
            question = next((n[len("question: "):] for n in r["notes"] if n.startswith("question:")), "replace?")
            if click.confirm(f"{agent}: {question}", default=False):
                r = install(mem, agent, replace=True)
        results.append(r)
        if not as_json:
            _print_result(r)
    if as_json:
        emit(results, True)
    if any(r["status"] == "error" for r in results):
        sys.exit(1)


@hooks.command("remove")
@click.argument("agents", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def remove_cmd(ctx: click.Context, agents: tuple[str, ...], as_json: bool) -> None:
    """Remove exactly remem's entries and files from AGENTS (default: every agent detected here).

    Other configuration and memories already stored stay.
    """
    from ..integrations import remove

    mem = open_mem(ctx)
    results = [remove(mem, a) for a in _targets(ctx, agents)]
    if as_json:
        emit(results, True)
    else:
        for r in results:
            _print_result(r)
    if any(r["status"] == "error" for r in results):
        sys.exit(1)


@hooks.command("status")
@click.argument("agents", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def status_cmd(ctx: click.Context, agents: tuple[str, ...], as_json: bool) -> None:
    """Show, per agent, whether it is detected and whether remem is installed."""
    from ..integrations import status

    rows = status(open_mem(ctx), list(agents) or None)

    def human(data: list[dict[str, Any]]) -> None:
        for row in data:
            state = "installed" if row["installed"] else ("partly installed" if row["partial"] else "not installed")
            seen = "detected" if row["detected"] else "not detected"
            line = f"{row['agent']:<12} {state:<17} {seen:<13} {row.get('config_dir', '')}"
            click.echo(line.rstrip())
            trust = row.get("trust")
            if trust and trust.get("untrusted") and row["installed"]:
                click.echo(f"{'':<12} hooks not yet trusted in Codex: {', '.join(trust['untrusted'])} "
                           "(run `codex`, then /hooks)")
            if row.get("error"):
                click.echo(f"{'':<12} error: {row['error']}")

    emit(rows, as_json, human)


COMMANDS = [hook, hooks]
