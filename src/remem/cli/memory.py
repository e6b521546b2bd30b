"""Memory commands: init, add, search, get, forget, stats."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any

import click

from ..ingest.normalize import InputError, decode_bytes
from . import count, emit, handle_errors, open_mem

scope_options = [
    click.option("--owner", default=None, help="Owner (profile) to read or write; default from config."),
    click.option("--agent", default=None, help="Agent label (claude-code, codex, …)."),
    click.option("--project", default=None, help="Project / working directory."),
]


def with_scope(fn: Any) -> Any:
    for opt in reversed(scope_options):
        fn = opt(fn)
    return fn


def _when(ts: float | None) -> str:
    if not ts:
        return "-"
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def init(ctx: click.Context, as_json: bool) -> None:
    """Initialise the data home (config, database, token). Safe to run again."""
    mem = open_mem(ctx)
    info = mem.init()
    emit(info, as_json, lambda d: click.echo(f"remem home ready at {d['home']}"))


@click.command()
@click.argument("text")
@with_scope
@click.option("--session", default="", help="Session id to attach the memory to.")
@click.option("--reply", default="", help="The answer that went with TEXT, if any.")
@click.option("--tag", "tags", multiple=True, help="Tag (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def add(ctx: click.Context, text: str, owner: str | None, agent: str | None, project: str | None,
        session: str, reply: str, tags: tuple[str, ...], as_json: bool) -> None:
    """Store TEXT as a memory ("-" reads it from stdin)."""
    if text == "-":
        text = decode_bytes(sys.stdin.buffer.read())
    mem = open_mem(ctx)
    res = mem.add(text, owner=owner, agent=agent or "cli", project=project or "", session=session,
                  reply=reply, tags=list(tags))
    if res.status.startswith("skipped"):
        emit(res.to_dict(), as_json, lambda d: click.echo(f"skipped: {d['status']}"))
        sys.exit(1)
    emit(res.to_dict(), as_json, lambda d: click.echo(f"{d['status']} {d['id']}"))


@click.command()
@click.argument("query")
@with_scope
@click.option("-k", "k", default=10, show_default=True, type=click.IntRange(1, 200), help="How many results.")
@click.option("--explain", is_flag=True, help="Show why each result matched (per-channel details).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def search(ctx: click.Context, query: str, owner: str | None, agent: str | None, project: str | None,
           k: int, explain: bool, as_json: bool) -> None:
    """Search memories (hybrid: words, substrings, vectors, entities)."""
    if not query.strip():
        raise InputError("query is empty")
    mem = open_mem(ctx)
    results = mem.search(query, owner=owner, agent=agent, project=project, k=k, explain=explain or as_json)

    def human(data: dict[str, Any]) -> None:
        if not data["results"]:
            click.echo("no memories match")
        for i, r in enumerate(data["results"], 1):
            first = r["text"].splitlines()[0] if r["text"] else ""
            # when the work happened (an imported turn was stored long after it)
            when = r.get("ended_at") or r.get("started_at") or r["created_at"]
            click.echo(f"{i:>2}. {r['id']}  {r['agent']} · {r['project'] or '-'} · {_when(when)}"
                       f"  score={r['score']:.4f}")
            click.echo(f"    {first[:160]}")
            if explain and "details" in r:
                for name, d in r["details"].get("channels", {}).items():
                    click.echo(f"      {name}: rank {d.get('rank')} score {d.get('score')}")
                for name, v in r["details"].get("boosts", {}).items():
                    click.echo(f"      boost {name}: {v}")

    emit({"query": query, "results": results}, as_json, human)


@click.command()
@click.argument("memory_id")
@click.option("--owner", default=None, help="Owner to read as; default from config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def get(ctx: click.Context, memory_id: str, owner: str | None, as_json: bool) -> None:
    """Show one whole memory."""
    mem = open_mem(ctx)
    rec = mem.get(memory_id, owner=owner)
    if rec is None:
        raise InputError(f"no memory {memory_id} in this scope")

    def human(r: dict[str, Any]) -> None:
        click.echo(f"{r['id']}  {r['agent']} · {r['project'] or '-'} · {r['status']} · {_when(r['started_at'])}")
        click.echo(f"session: {r['session_id'] or '-'}   owner: {r['owner']}")
        click.echo("\nrequest:\n" + r["request"])
        for a in r["actions"]:
            click.echo(f"\ntool {a['name']}{' (error)' if a['is_error'] else ''}: {a['input'][:300]}")
            if a["output"]:
                click.echo("  → " + a["output"][:300])
        if r["reply"]:
            click.echo("\nreply:\n" + r["reply"])

    emit(rec, as_json, human)


@click.command()
@click.argument("ids", nargs=-1)
@click.option("--session", default=None, help="Forget every memory of this session.")
@click.option("--source", default=None, help="Forget everything imported from this source / agent.")
@click.option("--owner", default=None, help="Owner whose memories to forget; default from config.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (session / source).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def forget(ctx: click.Context, ids: tuple[str, ...], session: str | None, source: str | None,
           owner: str | None, yes: bool, as_json: bool) -> None:
    """Delete memories by id, by session or by source, with what was derived from them."""
    chosen = sum(bool(x) for x in (ids, session, source))
    if chosen != 1:
        raise click.UsageError("give memory ids, or --session, or --source (exactly one)")
    if (session or source) and not yes and not as_json:
        click.confirm(f"Forget every memory of {'session ' + session if session else 'source ' + str(source)}?",
                      abort=True)
    mem = open_mem(ctx)
    gone = mem.forget(ids=list(ids) or None, session=session, source=source, owner=owner)
    if ids and not gone:
        raise InputError("no such memory in this scope")
    emit({"forgotten": len(gone), "ids": gone}, as_json, lambda d: click.echo(f"forgot {count(d['forgotten'], 'memory', 'memories')}"))


@click.command()
@click.option("--owner", default=None, help="Owner to count; default from config.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def stats(ctx: click.Context, owner: str | None, as_json: bool) -> None:
    """Counts of memories by agent, status and embedding state; database size."""
    mem = open_mem(ctx)
    data = mem.stats(owner=owner)

    def human(d: dict[str, Any]) -> None:
        click.echo(f"home: {d['home']}")
        click.echo(f"memories: {count(d['turns'], 'turn')} in {count(d['sessions'], 'session')}, "
                   f"{count(d['projects'], 'project')}"
                   f" (owner {', '.join(d['owners'])})")
        for agent, n in d["by_agent"].items():
            click.echo(f"  {agent:<14} {n}")
        emb = d["embeddings"]
        click.echo(f"embeddings: {emb.get('done', 0)} done, {emb.get('pending', 0)} pending, "
                   f"{emb.get('failed', 0)} failed")
        click.echo(f"jobs pending: {d['jobs_pending']}   database: {d['database_bytes'] / 1e6:.1f} MB")

    emit(data, as_json, human)


COMMANDS = [init, add, search, get, forget, stats]
