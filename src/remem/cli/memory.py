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


as_option = click.option(
    "--as", "as_agent", default=None, metavar="AGENT",
    help="Read as AGENT reads through its hooks (its owner and read_owners, e.g. an isolated agent's "
         "own memory) and escape memory text for an agent to read. For skills and commands.")


def read_owners(home: str | None, as_agent: str | None, owner: str | None) -> str | list[str] | None:
    """Whose memory a read covers: ``--owner``, or with ``--as`` the owners AGENT's hooks read
    (``Backend.read_owners``, the function every hook path takes), else the profile. Reads the
    config only (no database), so a command the daemon answers never opens the store."""
    if not as_agent:
        return owner
    if owner:
        raise click.UsageError("--as reads as an agent; it cannot be combined with --owner")
    from ..agents import canonical_agent
    from ..integrations.backend import Backend

    try:
        agent = canonical_agent(as_agent)
    except ValueError as e:
        raise click.UsageError(f"--as: {e}") from None
    return Backend(home, use_daemon=False).read_owners(agent)


def owner_param(home: str | None, owners: str | list[str] | None) -> str:
    """``owners`` as the daemon's ``owner=a,b`` parameter; none given: this CLI's profile (so an
    ``REMEM_OWNER`` in the shell counts, not the daemon's)."""
    if owners is None:
        from .. import config as configmod

        owners = str(configmod.load(home).get("owner"))
    return owners if isinstance(owners, str) else ",".join(owners)


def shown(as_agent: str | None) -> Any:
    """How stored text is printed: as it is for a person; with ``--as`` (an agent reads it)
    through the one renderer, ``agent_text.safe``."""
    if not as_agent:
        return lambda text, indent=None, limit=None: (str(text or "")[:limit] if limit else str(text or ""))
    from ..agent_text import safe

    return lambda text, indent=None, limit=None: safe(text, indent=indent, limit=limit)


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
@as_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def search(ctx: click.Context, query: str, owner: str | None, agent: str | None, project: str | None,
           k: int, explain: bool, as_agent: str | None, as_json: bool) -> None:
    """Search memories (hybrid: words, substrings, vectors, entities)."""
    if not query.strip():
        raise InputError("query is empty")
    home = ctx.ensure_object(dict).get("home")
    owners = read_owners(home, as_agent, owner)
    results = _search_daemon(home, query, owners, agent, project, k)
    if results is None:
        mem = open_mem(ctx)
        results = mem.search(query, owner=owners, agent=agent, project=project, k=k, explain=explain or as_json)
    show = shown(as_agent)

    def human(data: dict[str, Any]) -> None:
        if not data["results"]:
            click.echo("no memories match")
        for i, r in enumerate(data["results"], 1):
            text = r["text"] or ""
            first = show(text if as_agent else (text.splitlines()[0] if text else ""), limit=160)
            # when the work happened (an imported turn was stored long after it)
            when = r.get("ended_at") or r.get("started_at") or r["created_at"]
            click.echo(f"{i:>2}. {show(r['id'])}  {show(r['agent'])} · {show(r['project']) or '-'} · {_when(when)}"
                       f"  score={r['score']:.4f}")
            click.echo(f"    {first}")
            if explain and "details" in r:
                for name, d in r["details"].get("channels", {}).items():
                    click.echo(f"      {name}: rank {d.get('rank')} score {d.get('score')}")
                for name, v in r["details"].get("boosts", {}).items():
                    click.echo(f"      boost {name}: {v}")
                for name, v in r["details"].get("evidence", {}).items():
                    v = v.get("added") if isinstance(v, dict) else v
                    click.echo(f"      {'capped below a better word match, from' if name == 'capped' else '+ ' + name}: {v}")
                words = r["details"].get("words")
                if words:
                    click.echo(f"      words matched: {', '.join(words['matched']) or '(none)'}"
                               f" (coverage {words['coverage']})")

    data = {"query": query, "results": results}
    emit(_for_agent(data) if as_agent and as_json else data, as_json, human)


# what the daemon's search adds to each result for the viewer (a listing's preview); a direct search has none
VIEWER_FIELDS = ("tools", "actions_count", "errors", "request", "reply")


def _search_daemon(home: str | None, query: str, owners: str | list[str] | None, agent: str | None,
                   project: str | None, k: int) -> list[dict[str, Any]] | None:
    """The running daemon's results for this search (its warm embedder and caches), or None."""
    from .via_daemon import ask

    got = ask(home, "POST", "/memories/search", {"query": query, "k": k, "owner": owner_param(home, owners),
                                                  "agent": agent, "project": project})
    if not isinstance(got, dict) or not isinstance(got.get("results"), list):
        return None
    results: list[dict[str, Any]] = got["results"]
    for r in results:
        for key in VIEWER_FIELDS:
            r.pop(key, None)
    return results


def _for_agent(data: Any) -> Any:
    from ..agent_text import safe_tree

    return safe_tree(data)


@click.command()
@click.argument("memory_id")
@click.option("--owner", default=None, help="Owner to read as; default from config.")
@as_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def get(ctx: click.Context, memory_id: str, owner: str | None, as_agent: str | None, as_json: bool) -> None:
    """Show one whole memory."""
    home = ctx.ensure_object(dict).get("home")
    owners = read_owners(home, as_agent, owner)
    from urllib.parse import quote

    from .via_daemon import ask

    rec = ask(home, "GET", "/memories/" + quote(memory_id, safe=""), params={"owner": owner_param(home, owners)})
    if not isinstance(rec, dict):
        rec = open_mem(ctx).get(memory_id, owner=owners)
    if rec is None:
        raise InputError(f"no memory {memory_id} in this scope")
    show = shown(as_agent)
    # for an agent, every line of memory text is indented: none can pass for a header line
    body = (lambda text: "    " + show(text, indent="    ")) if as_agent else (lambda text: text)

    def human(r: dict[str, Any]) -> None:
        click.echo(f"{show(r['id'])}  {show(r['agent'])} · {show(r['project']) or '-'} · {show(r['status'])} · "
                   f"{_when(r['started_at'])}")
        click.echo(f"session: {show(r['session_id']) or '-'}   owner: {show(r['owner'])}")
        click.echo("\nrequest:\n" + body(r["request"]))
        for a in r["actions"]:
            click.echo(f"\ntool {show(a['name'])}{' (error)' if a['is_error'] else ''}: {show(a['input'], limit=300)}")
            if a["output"]:
                click.echo("  → " + show(a["output"], limit=300))
        if r["reply"]:
            click.echo("\nreply:\n" + body(r["reply"]))

    emit(_for_agent(rec) if as_agent and as_json else rec, as_json, human)


@click.command()
@click.argument("ids", nargs=-1)
@click.option("--session", default=None, help="Forget every memory of this session.")
@click.option("--source", default=None, help="Forget everything imported from this source / agent.")
@click.option("--owner", default=None, help="Owner whose memories to forget; default from config.")
@click.option("--undo", is_flag=True, help="Let forgotten ids / a session / a source back in (next sync).")
@click.option("--list", "list_", is_flag=True, help="List what remem keeps out (forgotten and not undone).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (session / source).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def forget(ctx: click.Context, ids: tuple[str, ...], session: str | None, source: str | None,
           owner: str | None, undo: bool, list_: bool, yes: bool, as_json: bool) -> None:
    """Delete memories by id, by session or by source, with what was derived from them.

    What you forget stays forgotten: later syncs, hooks, imports and the API keep it out (a
    forgotten session: every turn of it, also later ones; a forgotten source: what it held up to
    now). `remem forget --undo ...` lets it back in on the next sync; adding the same memory
    again with `remem add` brings that one back."""
    mem = open_mem(ctx)
    if list_:
        def show(d: dict[str, Any]) -> None:
            for t in d["kept_out"]:
                click.echo(_kept_line(t))
            if not d["kept_out"]:
                click.echo("nothing is kept out")

        emit({"kept_out": mem.tombstones(owner=owner)}, as_json, show)
        return
    chosen = sum(bool(x) for x in (ids, session, source))
    if chosen != 1:
        raise click.UsageError("give memory ids, or --session, or --source (exactly one)")
    if undo:
        lifted = mem.unforget(ids=list(ids) or None, session=session, source=source, owner=owner)
        if not lifted:
            raise InputError("nothing forgotten matches that in this scope (see remem forget --list)")
        emit({"let_back": len(lifted), "tombstones": lifted}, as_json,
             lambda d: click.echo(f"{count(d['let_back'], 'forgotten item')} let back in; the next `remem sync` "
                                  f"brings {'it' if d['let_back'] == 1 else 'them'} back from the agents' history"))
        return
    if (session or source) and not yes and not as_json:
        what = f"session {session}" if session else f"source {source}"
        click.confirm(f"Forget every memory of {what} and keep it out of later syncs?", abort=True)
    gone = mem.forget(ids=list(ids) or None, session=session, source=source, owner=owner)
    if ids and not gone:
        raise InputError("no such memory in this scope")
    if session:
        keep = (f"every turn of session {session} stays out of later syncs, hooks and imports, "
                f"also ones added later (undo: remem forget --undo --session {session})")
    elif source:
        keep = (f"what source {source} held up to now stays out of later syncs and imports; new work "
                f"from now on is remembered (undo: remem forget --undo --source {source})")
    else:
        keep = (f"{'it stays' if len(gone) == 1 else 'they stay'} out of later syncs, hooks and imports "
                "(undo: remem forget --undo "
                + " ".join(gone[:5]) + (" …" if len(gone) > 5 else "") + ")")
    emit({"forgotten": len(gone), "ids": gone, "kept_out": keep}, as_json,
         lambda d: click.echo(f"forgot {count(d['forgotten'], 'memory', 'memories')}; {d['kept_out']}"))


def _kept_line(t: dict[str, Any]) -> str:
    when = _when(t["created_at"])
    if t["kind"] == "turn":
        return f"turn     {t['turn_id']}  {t['agent']} · session {t['session_id'] or '-'} · forgotten {when}"
    if t["kind"] == "session":
        return f"session  {t['key']}  (every turn, also later ones) · forgotten {when}"
    return f"source   {t['key']}  (what it held up to {_when(t['until'])}) · forgotten {when}"


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
        off = "" if mem.config.get("embedding.enabled") else " (off: embedding.enabled is false, nothing is embedded)"
        click.echo(f"embeddings: {emb.get('done', 0)} done, {emb.get('pending', 0)} pending, "
                   f"{emb.get('failed', 0)} failed{off}")
        click.echo(f"jobs pending: {d['jobs_pending']}   database: {d['database_bytes'] / 1e6:.1f} MB")

    emit(data, as_json, human)


COMMANDS = [init, add, search, get, forget, stats]
