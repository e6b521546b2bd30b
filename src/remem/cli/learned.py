"""``remem learn`` and ``remem learned …``: run the learner now, review and govern what it learned."""

from __future__ import annotations

import json
import sys
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
    data = m.get("data") or {}
    if m.get("status") == "archived" and isinstance(data.get("decay"), dict):
        flags += f" [decayed: retention {float(data['decay'].get('retention') or 0):.2f}]"
    if m.get("status") == "deleted" and data.get("deleted_at"):
        flags += f" [deleted {_age(float(data['deleted_at']))}]"
    mark = data.get("llm")
    if isinstance(mark, dict) and mark.get("verdict"):
        flags += f" [llm: {mark['verdict']}]"
    line = (f"{m['id']}  {m['status']:<10} {m['kind']:<13} {m['confidence']:.2f}  "
            f"{count(m['sessions'], 'session')}  {m['project'] or '-'}{flags}\n    {m['text']}")
    if isinstance(mark, dict) and mark.get("verdict") == "quarantine":
        line += f"\n    quarantined: {mark.get('reason') or '-'}" + (
            f"; proposed “{mark['proposed']}”" if mark.get("proposed") else "")
    return line


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
                   f"{n.get('candidate', 0)} to review"
                   + (f"; {d['decayed']} archived by decay" if d.get("decayed") else "")
                   + (f"; {d['purged']} deleted for good (past the restore window)" if d.get("purged") else ""))
        if "llm" in d:
            j = d["llm"]
            click.echo(f"llm: {count(j['requests'], 'request')}, {j['tokens']} tokens: {j['keep']} kept, "
                       f"{j['reject']} rejected, {j['rewrite']} rewritten, {j['quarantine']} quarantined; "
                       f"{j['pending']} waiting" + (f" ({j['stopped']})" if j["stopped"] else ""))

    emit(d, as_json, human)


@click.group()
def learned() -> None:
    """Review what remem learned: list, show, history, approve, reject, edit, lock, delete, restore, forget,
    rollback, feedback (good, bad, outdated); export it as a file to edit and share, import the edited file."""


@learned.command("list")
@click.option("--project", default=None, help="Only this project.")
@click.option("--status", default="active", show_default=True,
              help="candidate, active, superseded, archived, rejected, deleted, review (candidates), quarantined "
              "(candidates whose LLM answer could not be backed by their evidence) or all.")
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
        r = d.get("retention") or {}
        if r:
            click.echo(f"    retention {r['score']:.2f} (half-life {r['half_life_days']:g} days"
                       + (f"; exempt from decay: {r['exempt']}" if r["exempt"] else "") + ")")
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
            if (e["after"] or {}).get("reason"):
                click.echo(f"    {e['after']['reason']}")

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
                      ("forget", "Forget a learned memory for good (as `delete --hard`): its text and history go; "
                                 "it is not learned again.")):
    learned.add_command(_decision(_action, _doc))


@learned.command()
@click.argument("memory_id")
@click.option("--hard", is_flag=True, help="Gone now: text and history deleted, a tombstone keeps learning from "
              "re-creating it (cannot be undone).")
@click.option("--owner", default=None, help="Owner; default from config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def delete(ctx: click.Context, memory_id: str, hard: bool, owner: str | None, as_json: bool) -> None:
    """Delete a learned memory: kept as deleted (never injected) and restorable with `remem learned restore`
    for learn.retention.deleted_days (30), then deleted for good; --hard deletes it for good now."""
    mem = open_mem(ctx)
    d = _service().delete(mem, _scope(ctx, None, owner), memory_id, hard=hard)
    days = _service().deleted_days(mem)
    emit(d, as_json, lambda d: click.echo(f"deleted {d['id']} for good (it is not learned again)" if hard else
                                          f"deleted {d['id']}: restorable for {days:g} days with "
                                          f"`remem learned restore {d['id']}`"))


@learned.command()
@click.argument("memory_id")
@click.option("--owner", default=None, help="Owner; default from config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def restore(ctx: click.Context, memory_id: str, owner: str | None, as_json: bool) -> None:
    """Undo a delete (within learn.retention.deleted_days) or an archive (by you, by decay or by feedback:
    the memory becomes active and approved, so decay leaves it be)."""
    d = _service().act(open_mem(ctx), _scope(ctx, None, owner), memory_id, "restore")
    emit(d, as_json, lambda d: click.echo(f"restored {d['id']}: it is {d['status']}"))


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


@learned.command("export")
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True,
              help="Markdown (for CLAUDE.md, AGENTS.md, .cursor/rules) or JSON.")
@click.option("--project", default=None, help="Only this project.")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None, help="File (default: stdout).")
@click.option("--owner", default=None, help="Owner; default from config.")
@click.pass_context
@handle_errors
def export_(ctx: click.Context, fmt: str, project: str | None, out: str | None, owner: str | None) -> None:
    """Write the active conventions, preferences, decisions, procedures and facts as a file to edit
    and share (paths anonymised, secrets redacted); read it back with `remem learned import`.

    Paste it into CLAUDE.md or AGENTS.md (import reads only what lies between its header and end
    lines) or write it as a Cursor rule (`--out .cursor/rules/remem.mdc` adds the rule's front matter)."""
    text = _service().export_file(open_mem(ctx), _scope(ctx, project, owner), fmt,
                                  front_matter=bool(out and out.endswith(".mdc")))
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
        n = sum(1 for line in text.splitlines() if "<!-- remem:m_" in line) if fmt == "md" else \
            len(json.loads(text)["memories"])
        click.echo(f"wrote {count(n, 'learned memory', 'learned memories')} to {out}", err=True)
    else:
        click.echo(text, nl=False)


@learned.command("import")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--archive-missing", is_flag=True, help="Archive the memories the file no longer has.")
@click.option("--dry-run", is_flag=True, help="Only say what would change.")
@click.option("--project", default=None, help="Only this project of the file.")
@click.option("--owner", default=None, help="Owner; default from config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def import_(ctx: click.Context, path: str, archive_missing: bool, dry_run: bool, project: str | None,
            owner: str | None, as_json: bool) -> None:
    """Read an edited export back: changed lines are edited and locked, new lines become your own locked
    memories, deleted lines are archived only with --archive-missing. All or nothing."""
    if path == "-":
        text = sys.stdin.read()
    else:
        with open(path, encoding="utf-8-sig") as f:     # an editor's byte-order mark is not text
            text = f.read()
    d = _service().import_file(open_mem(ctx), _scope(ctx, project, owner), text, archive_missing=archive_missing,
                               dry_run=dry_run)

    def human(d: dict[str, Any]) -> None:
        would = "would be " if d["dry_run"] else ""
        for e in d["edited"]:
            click.echo(f"{would}edited and locked {e['id']}: {e['after']}")
        for e in d["created"]:
            click.echo(f"{would}added {e['kind']} {e['id']}: {e['text']}")
        for mid in d["archived"]:
            click.echo(f"{would}archived {mid}")
        if d["missing"] and not d["archived"]:
            click.echo(f"{count(len(d['missing']), 'memory', 'memories')} not in the file (kept; "
                       f"--archive-missing archives them):", err=True)
            for m in d["missing"]:
                click.echo(f"  {m['id']}  {m['kind']:<11} {m['text'][:100]}", err=True)
        click.echo(f"{'dry run: ' if d['dry_run'] else ''}{len(d['edited'])} edited, {len(d['created'])} added, "
                   f"{len(d['archived'])} archived, {d['unchanged']} unchanged")

    emit(d, as_json, human)


@learned.command("llm")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def llm_status(ctx: click.Context, as_json: bool) -> None:
    """The optional LLM (learn.llm.base_url): today's tokens, the circuit breaker, the cooldown and the
    replies that named memories it was not given (quarantined; `list --status quarantined` shows the rest)."""
    from ..layers import review

    d = review.status(open_mem(ctx))

    def human(d: dict[str, Any]) -> None:
        if not d["configured"]:
            click.echo("no LLM configured (learn.llm.base_url is empty): learning is offline, nothing is sent")
            return
        click.echo(f"{d['base_url']} · model {d['model'] or '-'} · {d['day']}: {d['tokens']} of "
                   f"{d['daily_tokens']} tokens, {count(d['requests'], 'request')}")
        if d["breaker_open_until"]:
            click.echo(f"circuit breaker open for {int(d['breaker_open_until'] - time.time())}s "
                       f"after {count(d['failures'], 'failure')}: {d['last_error']}")
        elif d["cooldown_until"]:
            click.echo(f"cooling down for {int(d['cooldown_until'] - time.time())}s")
        for e in d["strays"]:
            click.echo(f"  quarantined reply: {e.get('reason')} {e.get('id', '')} ({e.get('verdict') or '-'}, "
                       f"{e.get('chars', 0)} characters)")

    emit(d, as_json, human)


COMMANDS = [learn, learned]
