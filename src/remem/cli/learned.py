"""``remem learn`` and ``remem learned …``: run the learner now, review and govern what it learned."""

from __future__ import annotations

import time
from typing import Any

import click

from . import count, emit, handle_errors, open_mem


def _scope(ctx: click.Context, project: str | None, owner: str | None) -> Any:
    return open_mem(ctx).scope(owner, project=project)


def _age(ts: float | None) -> str:
    if not ts:
        return "-"
    d = max(0.0, time.time() - float(ts))
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if d >= n:
            return f"{int(d // n)}{unit} ago"
    return "just now"


def _line(m: dict[str, Any]) -> str:
    flags = "".join(f" [{f}]" for f in ("locked", "edited") if m.get(f))
    return (f"{m['id']}  {m['status']:<10} {m['kind']:<13} {m['confidence']:.2f}  "
            f"{count(m['sessions'], 'session')}  {m['project'] or '-'}{flags}\n    {m['text']}")


@click.command()
@click.option("--project", default=None, help="Only this project (default: every project with new turns).")
@click.option("--rebuild", is_flag=True, help="Recompute everything not locked from the turns.")
@click.option("--owner", default=None, help="Owner to learn for; default from config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def learn(ctx: click.Context, project: str | None, rebuild: bool, owner: str | None, as_json: bool) -> None:
    """Learn preferences, conventions, decisions, procedures and project facts from the stored turns now
    (the daemon also does it in the background after each sync and capture)."""
    d = open_mem(ctx).learn(project=project, rebuild=rebuild, owner=owner)

    def human(d: dict[str, Any]) -> None:
        n = d["learned"]
        click.echo(f"learned from {count(d['turns'], 'turn')} in {count(d['projects'], 'project')} "
                   f"({d['skipped']} unchanged) in {d['seconds']:.2f}s: {d['created']} new, {d['updated']} "
                   f"changed, {d['dropped']} dropped; now {n.get('active', 0)} active, "
                   f"{n.get('candidate', 0)} to review")

    emit(d, as_json, human)


@click.group()
def learned() -> None:
    """Review what remem learned: list, show, history, approve, reject, edit, lock, forget, rollback,
    and feedback (good, bad, outdated)."""


@learned.command("list")
@click.option("--project", default=None, help="Only this project.")
@click.option("--status", default="active", show_default=True,
              help="candidate, active, superseded, archived, rejected, review (candidates) or all.")
@click.option("--kind", default=None, help="preference, convention, correction, decision, procedure, fact, "
              "working_state.")
@click.option("--owner", default=None, help="Owner; default from config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def list_(ctx: click.Context, project: str | None, status: str, kind: str | None, owner: str | None,
          as_json: bool) -> None:
    """Learned memories, best first."""
    rows = open_mem(ctx).learned(project=project, status=status, kind=kind, owner=owner)

    def human(rows: list[dict[str, Any]]) -> None:
        for m in rows:
            click.echo(_line(m))
        if not rows:
            click.echo(f"no {status} learned memories" + (f" of kind {kind}" if kind else "")
                       + " (run `remem learn`)")

    emit(rows, as_json, human)


def _service() -> Any:
    from ..layers import service

    return service


@learned.command()
@click.argument("memory_id")
@click.option("--owner", default=None, help="Owner; default from config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def show(ctx: click.Context, memory_id: str, owner: str | None, as_json: bool) -> None:
    """One learned memory with the turns it came from (their requests, shortened)."""
    d = _service().show(open_mem(ctx), _scope(ctx, None, owner), memory_id)

    def human(d: dict[str, Any]) -> None:
        click.echo(_line(d))
        click.echo(f"    layer {d['layer']} · slot {d['slot'] or '-'} · {count(d['turns'], 'evidence turn')} · "
                   f"updated {_age(d['updated_at'])}" + (f" · superseded by {d['superseded_by']}"
                                                        if d['superseded_by'] else ""))
        for q in d["quotes"]:
            mark = "against" if q["against"] else "said"
            click.echo(f"  {mark} in {q['turn_id']} (session {q['session_id'] or '-'}, {_age(q['at'])}):")
            click.echo(f"    “{q['request']}”")
        if not d["quotes"]:
            click.echo("  (its evidence turns are gone)")

    emit(d, as_json, human)


@learned.command()
@click.argument("memory_id")
@click.option("--owner", default=None, help="Owner; default from config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def history(ctx: click.Context, memory_id: str, owner: str | None, as_json: bool) -> None:
    """Every change of one learned memory (roll one back with `remem learned rollback EVENT_ID`)."""
    events = _service().history(open_mem(ctx), _scope(ctx, None, owner), memory_id)

    def human(events: list[dict[str, Any]]) -> None:
        for e in events:
            before = (e["before"] or {}).get("status", "-")
            after = (e["after"] or {}).get("status", "-")
            text = (e["after"] or {}).get("text") or ""
            click.echo(f"event {e['id']}  {_age(e['ts']):<10} {e['action']:<10} by {e['actor']:<8} "
                       f"{before} → {after}" + (f"  {text[:80]}" if text else ""))

    emit(events, as_json, human)


def _decision(action: str, doc: str) -> click.Command:
    @click.command(name=action, help=doc)
    @click.argument("memory_id")
    @click.option("--owner", default=None, help="Owner; default from config.")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @click.pass_context
    @handle_errors
    def cmd(ctx: click.Context, memory_id: str, owner: str | None, as_json: bool) -> None:
        d = _service().act(open_mem(ctx), _scope(ctx, None, owner), memory_id, action)
        emit(d, as_json, lambda d: click.echo(f"{action}: {d['id']} is now {d['status']}"
                                              + (" (locked)" if d["locked"] else "")))

    return cmd


for _action, _doc in (("approve", "Make a learned memory active (it stays active on later learns)."),
                      ("reject", "Reject a learned memory: the learner never re-creates it from the same evidence."),
                      ("lock", "Lock a learned memory: never superseded or rewritten automatically."),
                      ("unlock", "Unlock a learned memory."),
                      ("archive", "Archive a learned memory (outdated): it is no longer used."),
                      ("forget", "Forget a learned memory: its text and history go; it is not learned again.")):
    learned.add_command(_decision(_action, _doc))


def _verdict(verdict: str, doc: str) -> click.Command:
    @click.command(name=verdict, help=doc)
    @click.argument("memory_id")
    @click.option("--note", default="", help="Why (kept with the memory, redacted, ≤ 500 characters).")
    @click.option("--owner", default=None, help="Owner; default from config.")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @click.pass_context
    @handle_errors
    def cmd(ctx: click.Context, memory_id: str, note: str, owner: str | None, as_json: bool) -> None:
        d = _service().feedback(open_mem(ctx), _scope(ctx, None, owner), memory_id, verdict, note, actor="user")
        emit(d, as_json, lambda d: click.echo(f"{verdict}: {d['id']} is now {d['status']}"))

    return cmd


for _verdict_name, _doc in (("good", "Feedback: a learned memory is right (approve: it is active and stays so)."),
                            ("bad", "Feedback: a learned memory is wrong (reject: never injected, not re-learned "
                                    "from the same evidence)."),
                            ("outdated", "Feedback: a learned memory no longer holds (archive: kept, never injected).")):
    learned.add_command(_verdict(_verdict_name, _doc))


@learned.command()
@click.argument("memory_id")
@click.argument("text")
@click.option("--owner", default=None, help="Owner; default from config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def edit(ctx: click.Context, memory_id: str, text: str, owner: str | None, as_json: bool) -> None:
    """Rewrite a learned memory's text in your words (this locks it)."""
    d = _service().act(open_mem(ctx), _scope(ctx, None, owner), memory_id, "edit", text=text)
    emit(d, as_json, lambda d: click.echo(f"edited and locked {d['id']}: {d['text']}"))


@learned.command()
@click.argument("event_id", type=int)
@click.option("--owner", default=None, help="Owner; default from config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def rollback(ctx: click.Context, event_id: int, owner: str | None, as_json: bool) -> None:
    """Put a learned memory back as it was before one event of its history."""
    d = _service().rollback(open_mem(ctx), _scope(ctx, None, owner), event_id)
    emit(d, as_json, lambda d: click.echo(f"rolled back event {event_id}: {d['id']} is {d['status']}, "
                                          f"“{d['text']}”"))


COMMANDS = [learn, learned]
