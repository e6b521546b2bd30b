"""History commands: ``remem sources`` (list, add) and ``remem sync``."""

from __future__ import annotations

import signal
import sys
from datetime import UTC, datetime
from typing import Any

import click

from . import count, emit, handle_errors, open_mem

EXPLAIN = ("messages scanned counts every record read; one turn (a request, its tool calls and the "
           "final reply) is built from several messages and becomes one memory, so memories added is "
           "smaller. Incomplete turns (no final reply yet) are completed by a later sync.")


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M") if ts else "never"


@click.group("sources", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def sources_group(ctx: click.Context, as_json: bool) -> None:
    """List the agent histories found on this machine (or add another agent)."""
    if ctx.invoked_subcommand is not None:
        return
    from ..sources.sync import detect_sources

    mem = open_mem(ctx)
    found = detect_sources(mem)

    def human(rows: list[dict[str, Any]]) -> None:
        if not rows:
            click.echo("no agent history found on this machine")
            return
        for r in rows:
            click.echo(f"{r['name']:<18} {r['format']:<16} {r['units']:>6} {'session ' if r['units'] == 1 else 'sessions'}  {r['bytes'] / 1e6:8.1f} MB  "
                       f"last sync {_when(r['last_sync_at'])}  cursor {_when(r['cursor'])}")
            for p in r["paths"]:
                click.echo(f"{'':<18} {p}")

    emit(found, as_json, human)


@sources_group.command("add")
@click.argument("name", nargs=-1, required=True)
@click.option("--path", "paths", multiple=True, help="Absolute path to its install, history or skill dir.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def sources_add(ctx: click.Context, name: tuple[str, ...], paths: tuple[str, ...], as_json: bool) -> None:
    """Add another agent by NAME (presets: kimi code, zcode, minimax code, coder, or any name)."""
    from .. import tasks

    mem = open_mem(ctx)

    def progress(e: dict[str, Any]) -> None:
        if not as_json:
            click.echo(f"… checking {e.get('step')}", err=True)

    res = tasks.discover(mem, " ".join(name), list(paths), on_progress=progress)

    def human(d: dict[str, Any]) -> None:
        for s in d["steps"]:
            click.echo(f"  {s}")
        if d["status"] == "imported":
            r = d["result"]
            click.echo(f"{d['name']}: imported {count(r['turns_added'], 'memory', 'memories')} from "
                       f"{count(r['messages_scanned'], 'message')}")
        else:
            click.echo(f"{d['name']}: {d['status'].replace('_', ' ')}. {d.get('hint', '')}")

    emit(res, as_json, human)
    if res["status"] != "imported":
        sys.exit(1)


def _write_notes(t: dict[str, Any]) -> list[str]:
    """Quiet counts of what was kept out or repaired, when non-zero (``--json`` always has them)."""
    out = []
    n = int(t.get("skipped_forgotten") or 0)
    if n:
        out.append(f"{count(n, 'turn')} you forgot kept out (skipped_forgotten)")
    n = int(t.get("times_fixed") or 0)
    if n:
        out.append(f"{count(n, 'implausible time')} replaced by the turn's other time "
                   "(times_fixed)")
    n, turns = int(t.get("sessions_private") or 0), int(t.get("skipped_private") or 0)
    if n or turns:
        out.append(f"{count(n, 'session')} skipped for privacy ({count(turns, 'turn')} kept out: incognito, "
                   "the incognito switch or an ignored project; docs/privacy.md)")
    n = int(t.get("ignored") or 0)
    if n:
        out.append(f"{count(n, '/remem-resume request or pick', '/remem-resume requests and picks')} not stored "
                   "(ignored)")
    return out


@click.command("sync")
@click.argument("agents", nargs=-1)
@click.option("--full", is_flag=True, help="Rescan everything, not only what changed.")
@click.option("--yes", is_flag=True, help="Do not ask before a full rescan.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def sync_cmd(ctx: click.Context, agents: tuple[str, ...], full: bool, yes: bool, as_json: bool) -> None:
    """Import new history from every detected agent (or only AGENTS)."""
    from .. import tasks
    from ..sources.sync import SyncControl

    if full and not yes:
        if not sys.stdin.isatty():
            raise click.UsageError("--full rescans everything; add --yes to confirm")
        click.confirm("Rescan every session of every source? (nothing is duplicated)", abort=True)
    mem = open_mem(ctx)
    control = SyncControl()
    signal.signal(signal.SIGINT, lambda *_: control.stop())
    show = not as_json and sys.stderr.isatty()
    state: dict[str, Any] = {}

    def progress(e: dict[str, Any]) -> None:
        if not show:
            return
        if e["event"] == "source_start":
            state["bar"] = click.progressbar(length=max(1, e["units_total"]), label=f"{e['source']:<14}",
                                             file=sys.stderr, show_pos=True)
            state["bar"].__enter__()
            state["done"] = 0
        elif e["event"] == "progress" and "bar" in state:
            state["bar"].update(e["units_done"] - state["done"])
            state["done"] = e["units_done"]
        elif e["event"] == "source_done" and "bar" in state:
            state.pop("bar").__exit__(None, None, None)

    result = tasks.sync(mem, list(agents) or None, full=full, control=control, on_progress=progress)
    tasks.index(mem)  # entities and substrings now (the daemon's index job does it there)

    def human(d: dict[str, Any]) -> None:
        if not d["sources"]:
            click.echo("no agent history found on this machine")
        for s in d["sources"]:
            unknown = f", {s['skipped_unknown']} skipped (unknown record type)" if s.get("skipped_unknown") else ""
            click.echo(f"{s['source']:<14} {count(s['messages_scanned'], 'message'):>16} → {s['turns_added']:>5} added, "
                       f"{s['turns_updated']} updated, {count(s['duplicates'], 'duplicate')}, {s['skipped_incomplete']} "
                       f"incomplete, {s['skipped_oversize']} oversize, {s['failed']} failed{unknown}")
        t = d["total"]
        click.echo(f"total: {count(t['messages_scanned'], 'message')} scanned ({t['unique_messages']} unique) → "
                   f"{count(t['turns_added'], 'memory', 'memories')} added, {t['turns_updated']} updated "
                   f"in {d['seconds']:.1f}s")
        for line in _write_notes(t):
            click.echo(f"  - {line}")
        for err in t["errors"][:10]:
            click.echo(f"  ! {err}")
        for note in t.get("skipped", [])[:10]:
            click.echo(f"  - skipped {note}")
        if d["stopped"]:
            click.echo("stopped: run `remem sync` again to finish")

    emit(result, as_json, human)


COMMANDS = [sources_group, sync_cmd]
