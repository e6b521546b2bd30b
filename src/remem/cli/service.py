"""Service commands: up, serve, status, mcp."""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from . import count, emit, fail, handle_errors

UP_ERRORS = 10  # reasons `remem up` lists for files it could not read (as `remem sync` does)


def _home(ctx: click.Context) -> Path:
    from ..config import home_dir

    return home_dir(ctx.ensure_object(dict).get("home")).expanduser().resolve()


def _settings(home: Path) -> tuple[str, int]:
    from .. import config as configmod

    cfg = configmod.load(home)
    return str(cfg.get("server.host")), int(cfg.get("server.port"))


@click.command()
@click.option("--host", default=None, help="Address to listen on (default 127.0.0.1; others need a token).")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="Port (default 7077).")
@click.option("--stop", "stop_", is_flag=True, help="Stop the running daemon of this home instead.")
@click.option("--no-background", is_flag=True,
              help="Do not start re-embedding, auto-sync or auto-install on start (requested jobs still run).")
@click.pass_context
@handle_errors
def serve(ctx: click.Context, host: str | None, port: int | None, stop_: bool, no_background: bool) -> None:
    """Run the remem daemon (REST API, viewer, background jobs) in the foreground.

    One daemon per home: a second start says where the first runs and exits 0.
    """
    from ..server import daemon

    home = _home(ctx)
    if stop_:
        stopped, msg = daemon.stop(home)
        click.echo(msg)
        return
    cfg_host, cfg_port = _settings(home)
    try:
        code = daemon.serve(home, host or cfg_host, cfg_port if port is None else port,
                            explicit_host=host is not None, background=not no_background,
                            echo=lambda m: click.echo(m, err=True))
    except daemon.DaemonError as e:
        fail(str(e), 2 if "refusing" in str(e) or "explicit --host" in str(e) else 1)
    ctx.exit(code)


@click.command()
@click.pass_context
@handle_errors
def down(ctx: click.Context) -> None:
    """Stop this home's daemon (what `remem up` started; the same as `remem serve --stop`).

    Agents keep working without it: their hooks recall from the database directly."""
    from ..server import daemon

    _stopped, msg = daemon.stop(_home(ctx))
    click.echo(msg)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--login-link", is_flag=True, help="Also print a one-click viewer login link (contains the token).")
@click.pass_context
@handle_errors
def status(ctx: click.Context, as_json: bool, login_link: bool) -> None:
    """Is the daemon running? Where, since when, and what is it doing."""
    from .. import privacy
    from ..server import daemon

    home = _home(ctx)
    running = daemon.find(home, wait=2.0)
    from .. import teamsync

    data: dict[str, Any] = {"home": str(home), "running": running is not None, "privacy": privacy.status(home),
                            "team": teamsync.summary(home)}
    if running is not None:
        data.update({"pid": running.pid, "url": running.url, "health": running.health})
        token = _token(home)
        if token and running.health is not None:
            try:
                st = daemon.api(home, running, "/status", token)
                data["jobs"] = st.get("jobs", {}).get("counts", {})
                data["active_jobs"] = st.get("jobs", {}).get("active", [])
                data["database_bytes"] = st.get("database", {}).get("bytes")
                data["embedder"] = st.get("embedder")
            except Exception as e:  # a status probe never fails the command
                data["error"] = f"{type(e).__name__}: {e}"
        if login_link and token:
            data["login_link"] = f"{running.url}/login#token={token}"
    else:
        data["embedding"] = _backlog(home)

    def human(d: dict[str, Any]) -> None:
        if not d["running"]:
            click.echo(f"remem is not running for {d['home']} (start it with `remem up` or `remem serve`)")
            e = d.get("embedding") or {}
            if e.get("enabled") is False:
                click.echo("embeddings: off (embedding.enabled is false): recall is by words, "
                           f"{count(e.get('pending', 0), 'turn')} without a vector")
            elif e.get("pending"):
                click.echo(f"embeddings: {_waiting(e)} (the daemon embeds them)")
            _privacy_line(d["privacy"])
            _team_line(d["team"])
            return
        h = d.get("health") or {}
        up = f", up {_ago(h['uptime'])}" if h.get("uptime") is not None else ""
        click.echo(f"remem is running at {d['url']} (pid {d['pid']}, {h.get('status', 'not answering')}{up})")
        if d.get("jobs") is not None:
            click.echo("jobs: " + (", ".join(f"{v} {k}" for k, v in sorted(d["jobs"].items())) or "none"))
            for j in d.get("active_jobs", []):
                frac = f" {j['fraction'] * 100:.0f}%" if j.get("fraction") is not None else ""
                click.echo(f"  #{j['id']} {j['kind']} {j['status']}{frac}")
        if d.get("database_bytes") is not None:
            click.echo(f"database: {d['database_bytes'] / 1e6:.1f} MB")
        e = d.get("embedder") or {}
        if e.get("configured"):
            state = "off" if not e.get("enabled") else (e.get("loaded") or "not loaded yet")
            runtime = f", on {e['runtime']}" if e.get("runtime") else ""
            pending = f", {_waiting(e)}" if e.get("pending") else ""
            click.echo(f"embedder: {e['configured']} ({state}{runtime}{pending})"
                       + (f" — {e['error']}" if e.get("error") else ""))
        _privacy_line(d["privacy"])
        _team_line(d["team"])
        if d.get("login_link"):
            click.echo(f"login link: {d['login_link']}")

    emit(data, as_json, human)


def _team_line(t: dict[str, Any]) -> None:
    """The team server this home syncs with, the last sync and what went wrong (docs/team.md)."""
    if not t.get("joined"):
        return
    last = t.get("last")
    when = f"last sync {_ago(time.time() - last['at'])} ago ({last['pushed']} up, {last['pulled']} down)" \
        if last else "never synced"
    err = t.get("last_error")
    if err and (not last or float(err.get("at") or 0) > float(last.get("at") or 0)):
        when += f"; the last try failed: {err['error']}"
    conflicts = f"; {count(t['conflicts'], 'conflict')} (remem team status)" if t.get("conflicts") else ""
    click.echo(f"team: {t['url']} as {t['user']} ({', '.join(t['teams']) or 'no teams'}); {when}{conflicts}")


def _privacy_line(p: dict[str, Any]) -> None:
    """The home's incognito switch and the sessions incognito now (docs/privacy.md)."""
    if p.get("error"):
        click.echo(f"incognito: unknown — {p['error']} (hooks capture and recall nothing, sync refuses, "
                   "until it is fixed)")
        return
    sessions = f"; {count(p['incognito_sessions'], 'session')} incognito now" if p.get("incognito_sessions") else ""
    if p.get("incognito"):
        since = datetime.fromtimestamp(p["since"]).strftime("%Y-%m-%d %H:%M") if p.get("since") else "?"
        click.echo(f"incognito: ON for every agent since {since} (nothing captured, learned or recalled; "
                   f"switch it off in the viewer or with `remem incognito off`){sessions}")
    else:
        click.echo(f"incognito: off{sessions}")


def _backlog(home: Path) -> dict[str, Any] | None:
    """Turns waiting for vectors and the ETA, read from the database without the daemon (None
    when this home has no database yet)."""
    from .. import config as configmod
    from ..embed.worker import RATE_FILE, backlog
    from ..store import ENGINE_ERRORS, open_store

    cfg = configmod.load(home)
    if not cfg.on_server and not cfg.db_path.is_file():
        return None
    try:
        store = open_store(cfg.database_url if cfg.on_server else str(cfg.db_path), home, readonly=True)
        try:
            return {**backlog(store, home / RATE_FILE),  # type: ignore[arg-type]
                    "enabled": bool(cfg.get("embedding.enabled"))}
        finally:
            store.close()
    except ENGINE_ERRORS as e:  # a status probe never fails the command
        return {"error": f"{type(e).__name__}: {e}"}


def _waiting(e: dict[str, Any]) -> str:
    """"1,234 turns waiting, about 2 min at 40 turns/s" (or "ETA unknown" before a rate is measured)."""
    line = f"{count(e['pending'], 'turn')} waiting"
    if e.get("eta_seconds") is not None and e.get("turns_per_s"):
        return line + f", about {_ago(e['eta_seconds'])} at {e['turns_per_s']:g} turns/s"
    return line + ", ETA unknown until a first batch is timed"


def _token(home: Path) -> str:
    try:
        return (home / "token").read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _ago(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    return f"{s // 3600}h {s % 3600 // 60}m"


@click.command()
@click.option("--agent", default=None, help="Read and write as this agent (its owner and read scope).")
@click.option("--owner", default=None, help="Owner (profile) to use instead of the agent's.")
@click.option("--project", default=None, help="Limit reads to this project by default.")
@click.option("--team", "team", is_flag=True,
              help="Act as the user of the team server this home joined (remem team join): its memories and its teams'.")
@click.pass_context
@handle_errors
def mcp(ctx: click.Context, agent: str | None, owner: str | None, project: str | None, team: bool) -> None:
    """Serve remem's memory tools over MCP (stdio) for any MCP client."""
    from ..mcp_server import run

    run(home=ctx.ensure_object(dict).get("home"), agent=agent, owner=owner, project=project, team=team)


@click.command()
@click.option("--no-import", is_flag=True, help="Skip importing existing agent history.")
@click.option("--no-daemon", is_flag=True, help="Do not start the daemon.")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Port for the daemon (default: server.port, 7077).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (no progress bar).")
@click.pass_context
@handle_errors
def up(ctx: click.Context, no_import: bool, no_daemon: bool, port: int | None, as_json: bool) -> None:
    """Set remem up on this machine: home, agent history, daemon. Safe to run again."""
    from ..core import Remem
    from ..server import daemon, optional

    home = _home(ctx)
    out: dict[str, Any] = {"home": str(home)}
    mem = Remem(home)
    try:
        mem.init()
        from ..integrations import refresh_launcher
        out["hook_launcher_rewritten"] = refresh_launcher(mem)   # hooks follow this interpreter
        running = daemon.find(home, wait=2.0)
        if not no_daemon and (running is None or running.health is None):
            host, cfg_port = _settings(home)
            port = cfg_port if port is None else port
            if not daemon.port_free(host, port):  # say so before a long import, not after it
                fail(daemon.port_taken(host, port))
        if no_import:
            out["import"] = {"skipped": "--no-import"}
        else:
            try:
                sync = optional.sync_engine()
            except optional.Unavailable as e:
                out["import"] = {"skipped": str(e)}
            else:
                out["agents"] = [s.get("agent") or s.get("name") for s in sync.detect_sources(mem)]
                if not as_json:
                    click.echo("agents found: " + (", ".join(out["agents"]) or "none yet"), err=True)
                if running is not None and running.health is not None:
                    out["import"] = _import_via_daemon(home, running, as_json)
                else:
                    out["import"] = _import_here(mem, sync, as_json)
        out["memories"] = mem.stats()["turns"]
    finally:
        mem.close()
    if not no_daemon:
        if running is None or running.health is None:
            try:
                running = daemon.spawn(home, _settings(home)[1] if port is None else port)
            except daemon.DaemonError as e:
                fail(str(e))
            out["daemon"] = "started"
        else:
            out["daemon"] = "already running"
        out["url"] = running.url
        out["pid"] = running.pid

    def human(d: dict[str, Any]) -> None:
        imp = d.get("import") or {}
        if "skipped" in imp:
            click.echo(f"history import skipped: {imp['skipped']}")
        elif imp:
            t = imp.get("total", {})
            if not t.get("turns_added") and not t.get("messages_scanned"):
                # say what is true: nothing found, nothing in what was found, or nothing new
                click.echo("no agent history found on this machine yet" if not d.get("agents") else
                           "no conversations in the agents' history yet" if not d["memories"] else
                           "history is up to date: nothing new since the last import")
            else:
                click.echo(f"imported: {count(t.get('turns_added', 0), 'new memory', 'new memories')} from "
                           f"{count(t.get('messages_scanned', 0), 'message')} ({t.get('duplicates', 0)} already known)")
            if t.get("failed"):
                # a file is reported once per change (sync.py), so the reasons are shown here, not deferred
                errs = t.get("errors") or []
                click.echo(f"  {t['failed']} could not be read:")
                for err in errs[:UP_ERRORS]:
                    click.echo(f"  ! {err}")
                if len(errs) > UP_ERRORS:
                    click.echo(f"  … and {len(errs) - UP_ERRORS} more: `remem sync --json --full` reads every file "
                               "again and lists them all")
            if t.get("skipped_unknown"):
                click.echo(f"  {t['skipped_unknown']} skipped (unknown record type; nothing remem understands was lost)")
        click.echo(f"remem home: {d['home']}  ·  memories stored: {d['memories']}")
        if d.get("url"):
            click.echo(f"viewer: {d['url']}  (daemon {d['daemon']}, pid {d['pid']}; `remem down` stops it)")
            click.echo(f"log in with the token in {Path(d['home']) / 'token'}, "
                       "or open the link from `remem status --login-link`")
        hooks = d.get("hooks") or {}
        if hooks.get("missing"):
            click.echo(f"next: remem hooks install   (live capture and recall inside {', '.join(hooks['missing'])})")
        elif hooks.get("installed"):
            click.echo(f"hooks: installed in {', '.join(hooks['installed'])}")

    out["hooks"] = _hooks(home)
    emit(out, as_json, human)


def _hooks(home: Path) -> dict[str, list[str]]:
    """Agents found here with remem's hook or plugin fully installed, and those still without it."""
    from ..server import optional

    try:
        mod = optional.integrations()
        env = dict(os.environ, REMEM_HOME=str(home))
        found = mod.detected_agents(env)
        rows = mod.status(None, agents=found, env=env) if found else []
    except Exception:  # noqa: BLE001 - a hint on the last line never fails `remem up`
        return {}
    rows = [r for r in rows if r.get("detected")]
    return {"installed": [r["agent"] for r in rows if r.get("installed")],
            "missing": [r["agent"] for r in rows if not r.get("installed")]}


def _bar(label: str, quiet: bool) -> Any:
    """A progress bar on stderr over 0..1000 (a silent stand-in with --json)."""
    if quiet:
        return _Null()
    return click.progressbar(length=1000, label=label, file=click.get_text_stream("stderr"))  # type: ignore[operator]


def _import_here(mem: Any, sync: Any, quiet: bool) -> dict[str, Any]:
    from .. import tasks
    from ..server.jobkinds import SyncProgress, plain, planned_sources

    tracker = SyncProgress(planned_sources(mem, sync, None))
    done = [0]
    with _bar("importing history", quiet) as bar:
        def progress(ev: dict[str, Any]) -> None:
            tracker.see(ev)
            frac = tracker.view().get("fraction")
            if frac is not None and int(frac * 1000) > done[0]:
                bar.update(int(frac * 1000) - done[0])
                done[0] = int(frac * 1000)

        result = tasks.sync(mem, None, on_progress=progress, engine=sync)
        bar.update(1000 - done[0])
    return plain(result)


def _import_via_daemon(home: Path, running: Any, quiet: bool) -> dict[str, Any]:
    """The daemon is up: ask it to sync and follow the job, so two imports never race."""
    from ..server import daemon

    token = _token(home)
    job = daemon.api(home, running, "/sources/sync", token, method="POST", body={})["job"]
    last = 0
    with _bar("importing history (daemon)", quiet) as bar:
        while True:
            job = daemon.api(home, running, f"/jobs/{job['id']}", token)
            frac = job.get("fraction")
            if frac is not None and int(frac * 1000) > last:
                bar.update(int(frac * 1000) - last)
                last = int(frac * 1000)
            if job["status"] in ("done", "failed", "stopped"):
                break
            time.sleep(0.3)
    if job["status"] != "done":
        return {"skipped": f"sync job {job['status']}: {job.get('error') or ''}".strip()}
    return job.get("progress", {}).get("result") or {}


class _Null:
    def __enter__(self) -> _Null:
        return self

    def __exit__(self, *a: object) -> None:
        return None

    def update(self, n: int) -> None:
        return None


COMMANDS = [up, down, serve, status, mcp]
