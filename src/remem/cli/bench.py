"""``remem bench``: the benchmark harnesses of the ``remem.bench`` package (they ship with the wheel)."""

from __future__ import annotations

import importlib
import json
import os
from types import ModuleType
from typing import Any

import click

from . import handle_errors


def harness(name: str) -> ModuleType:
    """The harness module ``remem.bench.NAME`` (imported when a bench command runs, not at CLI start)."""
    return importlib.import_module(f"remem.bench.{name}")


def _out(res: dict[str, Any], as_json: bool, render: Any) -> None:
    click.echo(json.dumps(res, indent=1, ensure_ascii=False, default=str) if as_json else render(res))


def _labels(labels: str | None, *, required: bool) -> str | None:
    """``--labels``, else bench/learn-labels when it is there; ``required``: the probes are needed."""
    if labels is None and os.path.isdir(os.path.join("bench", "learn-labels")):
        labels = os.path.join("bench", "learn-labels")
    if labels is None and required:
        raise click.BadParameter("no label folder: give --labels (their probes are the prompts)", param_hint="--labels")
    return labels


@click.group()
def bench() -> None:
    """Measure recall quality and speed (LoCoMo, LongMemEval, synthetic stores) and learning (derive-dev)."""


@bench.command()
@click.option("--data", required=True, type=click.Path(exists=True, dir_okay=False), help="LoCoMo JSON file.")
@click.option("--config", "config", default="default", show_default=True,
              help="Recall preset: default, bm25, bm25-reference, vector, lexical, only:CH1,CH2.")
@click.option("--model", default=None, help="Embedder for vector channels (default: the configured one).")
@click.option("--set", "sets", multiple=True, help="Override a setting: rrf_k=10, weights.vector=0.8.")
@click.option("--limit", type=int, default=None, help="First N conversations only.")
@click.option("--home", default=None, metavar="DIR",
              help="Keep the store in DIR (a later run reuses its turns and vectors).")
@click.option("--database-url", default=None, metavar="URL",
              help="Store the turns in this database (e.g. postgresql://…/locomo; a later run reuses them) instead of "
                   "the home's SQLite file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def locomo(data: str, config: str, model: str | None, sets: tuple[str, ...], limit: int | None,
           home: str | None, database_url: str | None, as_json: bool) -> None:
    """LoCoMo retrieval through the real write pipeline and search entry point."""
    h = harness("locomo")
    res = h.run(data, config=config, model=model, limit=limit, sets=h.overrides(list(sets)), home=home,
                database_url=database_url, progress=None if as_json else (lambda m: click.echo(m, err=True)))
    _out(res, as_json, h.render)


@bench.command()
@click.option("--data", required=True, type=click.Path(exists=True, dir_okay=False),
              help="LongMemEval JSON (e.g. longmemeval_s_cleaned.json).")
@click.option("--config", "config", default="default", show_default=True, help="Recall preset.")
@click.option("--model", default=None, help="Embedder for vector channels.")
@click.option("--limit", type=int, default=None, help="First N questions only.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def longmemeval(data: str, config: str, model: str | None, limit: int | None, as_json: bool) -> None:
    """LongMemEval session retrieval: the official metric and the lenient one others publish."""
    h = harness("longmemeval")
    res = h.run(data, config=config, model=model, limit=limit,
                progress=None if as_json else (lambda m: click.echo(m, err=True)))
    _out(res, as_json, h.render)


@bench.command()
@click.option("--sizes", default="10000,100000", show_default=True, help="Store sizes (turns), comma-separated.")
@click.option("--queries", default=200, show_default=True, help="Timed queries per size and entry point.")
@click.option("--model", default=None, help="Query embedder (default: the configured one).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--keep", default=None, metavar="DIR",
              help="Build each size's store in DIR/<size> and reuse it on later runs.")
@click.option("--real", is_flag=True, help="Real-shaped turns and prompts (bench/realistic.py); adds bytes per turn.")
@click.option("--spaced", default=0.0, type=click.FloatRange(min=0), metavar="MINUTES",
              help="Each prompt this long after the one before: the caches that keep for a while see the time pass.")
@click.option("--warm-prompts", default=0, type=click.IntRange(min=0), metavar="N",
              help="N untimed prompts (another seed) first, as a daemon that has been running.")
@handle_errors
def speed(sizes: str, queries: int, model: str | None, as_json: bool, keep: str | None, real: bool,
          spaced: float, warm_prompts: int) -> None:
    """turn_start / search latency and vector memory on generated stores."""
    h = harness("recall_speed")
    res = h.run([int(s) for s in sizes.split(",") if s.strip()], queries=queries, model=model,
                progress=None if as_json else (lambda m: click.echo(m, err=True)), keep=keep, real=real,
                spaced=spaced, warm_prompts=warm_prompts)
    _out(res, as_json, h.render)


@bench.command()
@click.option("--data", required=True, type=click.Path(exists=True, file_okay=False),
              help="The derive-dev folder (SpecStory histories in raw/<project>/).")
@click.option("--labels", default=None, type=click.Path(exists=True, file_okay=False),
              help="Label folder, one <project>.json each (default: bench/learn-labels when present).")
@click.option("--project", "projects", multiple=True, help="Only this project (repeatable).")
@click.option("--core-at", type=click.Choice(["prompt", "session_start"]), default="prompt", show_default=True,
              help="Where the core facts go: with a session's first prompt, or in its SessionStart context.")
@click.option("--packets/--no-packets", default=True, show_default=True,
              help="Need points, false and stale injections, with the history replayed in time order.")
@click.option("--store/--no-store", default=True, show_default=True,
              help="Packet size, database growth and learn speed in a real home per project.")
@click.option("--model", default=None, help="With --store: embed with this model (default: embeddings off).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def learn(data: str, labels: str | None, projects: tuple[str, ...], core_at: str, packets: bool, store: bool,
          model: str | None, as_json: bool) -> None:
    """What remem learns from real agent histories: extraction precision and recall, the world model,
    need-point coverage and false injection, packet size and database growth (docs/learning.md)."""
    if not os.path.isdir(os.path.join(data, "raw")):
        raise click.BadParameter(f"no raw/ folder under {data} (give the derive-dev folder)", param_hint="--data")
    labels = _labels(labels, required=False)
    only = list(projects) or None
    say = None if as_json else (lambda m: click.echo(m, err=True))
    res: dict[str, Any] = {"extraction": harness("learn").run(data, labels, only)}
    if packets:
        if labels is None:
            res["packets"] = {"skipped": "no labels: give --labels (their probes are the prompts)"}
        else:
            res["packets"] = harness("learn_packets").report(data, labels, only, core_at=core_at)
    if store:
        res["store"] = harness("learn_store").run(data, labels, only, model=model, say=say)
    parts = [("extraction", harness("learn").render), ("packets", harness("learn_packets").render),
             ("store", harness("learn_store").render)]
    _out(res, as_json, lambda r: "\n\n".join(
        f"== {name}\n" + (r[name]["skipped"] if "skipped" in r[name] else show(r[name]))
        for name, show in parts if name in r))



@bench.command("learn-recall")
@click.option("--data", required=True, type=click.Path(exists=True, file_okay=False),
              help="The derive-dev folder (SpecStory histories in raw/<project>/).")
@click.option("--labels", default=None, type=click.Path(exists=True, file_okay=False),
              help="Label folder, one <project>.json each (default: bench/learn-labels when present).")
@click.option("--model", default=None, help="Embed with this model (default: embeddings off, lexical recall).")
@click.option("--keep", default=None, type=click.Path(file_okay=False),
              help="Keep the imported home in this folder, and reuse it when it is there.")
@click.option("--set", "settings", multiple=True, metavar="NAME=VALUE[,…]",
              help="One more run with these recall constants (remem.recall.channels); repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def learn_recall(data: str, labels: str | None, model: str | None, keep: str | None, settings: tuple[str, ...],
                 as_json: bool) -> None:
    """Turn recall on real histories: at the labelled prompts that needed a rule, does search bring back
    the turns where the user said it (recall@5 / @10, MRR, search time)."""
    labels = _labels(labels, required=True)
    mod = harness("learn_recall")
    _out(mod.run(data, str(labels), model=model, keep=keep, settings=list(settings)), as_json, mod.render)


@bench.command("learn-frontier")
@click.option("--data", required=True, type=click.Path(exists=True, file_okay=False),
              help="The derive-dev folder (SpecStory histories in raw/<project>/).")
@click.option("--labels", default=None, type=click.Path(exists=True, file_okay=False),
              help="Label folder, one <project>.json each (default: bench/learn-labels when present).")
@click.option("--policy", "policies", multiple=True, type=click.Choice(["shipped", "anchored", "said-once"]),
              help="Only this activation policy (repeatable; default: all three).")
@click.option("--project", "projects", multiple=True, help="Only this project (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def learn_frontier(data: str, labels: str | None, policies: tuple[str, ...], projects: tuple[str, ...],
                   as_json: bool) -> None:
    """What activating once-said rules would buy and cost: active precision and recall, need points
    (covered, held by an active memory, missed and why) and false injection under each policy."""
    labels = _labels(labels, required=True)
    if not os.path.isdir(os.path.join(data, "raw")):
        raise click.BadParameter(f"no raw/ folder under {data} (give the derive-dev folder)", param_hint="--data")
    mod = harness("learn_frontier")
    _out(mod.run(data, str(labels), policies or mod.POLICIES, list(projects) or None), as_json, mod.render)


COMMANDS = [bench]
