"""Data commands: export, import, config, doctor, embed."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .. import dataset, tasks
from ..config import ConfigError
from ..core import iter_lines
from ..ingest.normalize import InputError
from . import count, emit, handle_errors, open_mem
from .settings import config_group


@click.command("export")
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None, help="JSONL file (default: stdout).")
@click.option("--sqlite", "sqlite_path", type=click.Path(dir_okay=False), default=None,
              help="Write a consistent copy of the whole database to this file instead.")
@click.option("--dataset", "dataset_fmt", type=click.Choice(dataset.FORMATS), default=None,
              help="Write fine-tuning data instead: successful turns as ShareGPT, Alpaca or OpenAI chat "
                   "records, personal data as placeholders; into --out incrementally (docs/export.md).")
@click.option("--project", default=None, help="--dataset: only this project.")
@click.option("--since", default=None, help="--dataset: only turns since (2026-01-31, epoch seconds, 7d, 12h).")
@click.option("--status", "statuses", multiple=True, default=("succeeded",), show_default=True,
              help="--dataset: turn statuses to keep (repeat for several).")
@click.option("--min-chars", type=int, default=dataset.MIN_CHARS, show_default=True,
              help="--dataset: minimum characters of the reply.")
@click.option("--min-turns", type=int, default=dataset.MIN_TURNS, show_default=True,
              help="--dataset: minimum turns of the turn's session.")
@click.option("--system", default="", help="--dataset: a system prompt for every record.")
@click.option("--owner", default=None, help="Owner to export; default from config.")
@click.option("--json", "as_json", is_flag=True, help="--dataset: print the report as JSON.")
@click.pass_context
@handle_errors
def export_cmd(ctx: click.Context, out: str | None, sqlite_path: str | None, dataset_fmt: str | None,
               project: str | None, since: str | None, statuses: tuple[str, ...], min_chars: int,
               min_turns: int, system: str, owner: str | None, as_json: bool) -> None:
    """Export memories as JSONL, the database as a SQLite file, or fine-tuning data (--dataset)."""
    mem = open_mem(ctx)
    if dataset_fmt:
        if sqlite_path:
            raise InputError("--dataset and --sqlite are two different exports: choose one")
        _export_dataset(mem, dataset_fmt, out=out, project=project, since=since, owner=owner, as_json=as_json,
                        opts=dataset.Options(statuses=tuple(statuses), min_chars=min_chars, min_turns=min_turns,
                                             system=system))
        return
    if (project or since or system or as_json or statuses != ("succeeded",) or min_chars != dataset.MIN_CHARS
            or min_turns != dataset.MIN_TURNS):
        raise InputError("--project, --since, --status, --min-chars, --min-turns, --system and --json are for "
                         "--dataset; a backup export holds everything")
    if sqlite_path:
        dest = mem.export_sqlite(sqlite_path)
        click.echo(f"wrote {dest}", err=True)
        return
    if out:
        with open(out, "w", encoding="utf-8") as f:
            n = mem.export_jsonl(f, owner=owner)
    else:
        n = mem.export_jsonl(sys.stdout, owner=owner)
    click.echo(f"exported {count(n, 'memory', 'memories')}", err=True)


def _export_dataset(mem: Any, fmt: str, *, out: str | None, project: str | None, since: str | None,
                    owner: str | None, as_json: bool, opts: dataset.Options) -> None:
    rep = dataset.export(mem, mem.scope(owner, project=project), fmt, out=out, stream=None if out else sys.stdout,
                         since=dataset.parse_since(since), opts=opts)
    d = rep.to_dict()

    def human(d: dict[str, Any]) -> None:
        left = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(d["filtered"].items()) if v)
        marks = ", ".join(f"{v} {k}" for k, v in sorted(d["placeholders"].items()))
        click.echo(f"wrote {count(d['written'], 'record')} ({fmt}) to {d['out']}"
                   + (f"; skipped {d['seen_before']} written before" if d["seen_before"] else "")
                   + (f", {d['duplicate']} duplicate" if d["duplicate"] else "")
                   + (f"; left out: {left}" if left else "")
                   + (f"; placeholders: {marks}" if marks else ""), err=True)

    if as_json:
        click.echo(json.dumps(d, ensure_ascii=False), err=not out)
    else:
        human(d)


@click.command("import")
@click.argument("path", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--owner", default=None, help="Import everything as this owner (default: keep the records' owner).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def import_cmd(ctx: click.Context, path: str, owner: str | None, as_json: bool) -> None:
    """Import a JSONL export ("-" reads stdin). Importing twice adds nothing.

    A line that is not a turn record is counted as invalid and skipped; the rest is imported."""
    mem = open_mem(ctx)
    if path == "-":
        counts = mem.import_jsonl(iter_lines(sys.stdin.buffer), owner=owner)
    else:
        with open(path, "rb") as f:
            counts = mem.import_jsonl(iter_lines(f), owner=owner)
    tasks.index(mem)  # entities and substrings now, as after a sync

    def human(d: dict[str, Any]) -> None:
        click.echo(", ".join(f"{k} {v}" for k, v in d.items() if v and k != "invalid_lines")
                   or "nothing to import")
        if d.get("invalid"):
            lines = ", ".join(str(n) for n in d.get("invalid_lines", []))
            more = "" if d["invalid"] <= len(d.get("invalid_lines", [])) else ", …"
            click.echo(f"skipped {d['invalid']} invalid line{'s' if d['invalid'] != 1 else ''} "
                       f"(not a turn record): {lines}{more}", err=True)

    emit(counts, as_json, human)


@click.command()
@click.option("--no-embedder", is_flag=True, help="Skip loading the embedding model.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def doctor(ctx: click.Context, no_embedder: bool, as_json: bool) -> None:
    """Check the database (integrity, WAL, FTS), token, embedder and job queue."""
    mem = open_mem(ctx)
    report = mem.doctor(load_embedder=not no_embedder)

    def human(d: dict[str, Any]) -> None:
        for name, c in d["checks"].items():
            click.echo(f"{'ok ' if c['ok'] else 'BAD'}  {name:<10} {c['detail']}")

    emit(report, as_json, human)
    if not report["ok"]:
        sys.exit(1)


@click.command()
@click.option("--limit", type=int, default=None, help="Embed at most this many memories.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def embed(ctx: click.Context, limit: int | None, as_json: bool) -> None:
    """Embed memories waiting for vectors now (the daemon does this in the background)."""
    mem = open_mem(ctx)
    n = mem.embed_pending(limit=limit)
    if mem.embedder_error:
        raise ConfigError(f"embedder unavailable: {mem.embedder_error}")
    emit({"embedded": n}, as_json, lambda d: click.echo(f"embedded {count(d['embedded'], 'memory', 'memories')}"))


_ = InputError
COMMANDS = [export_cmd, import_cmd, config_group, doctor, embed]
