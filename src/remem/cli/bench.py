"""``remem bench``: the benchmark harnesses in the source tree's bench/ folder."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import click

from . import handle_errors

BENCH_DIR = Path(__file__).resolve().parents[3] / "bench"


def harness(name: str) -> ModuleType:
    """Load bench/NAME.py (it ships with the source checkout, not the wheel)."""
    path = BENCH_DIR / f"{name}.py"
    if not path.is_file():
        raise click.ClickException(f"benchmark harness not found: {path} (run from a source checkout)")
    spec = importlib.util.spec_from_file_location(f"remem_bench_{name}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _out(res: dict[str, Any], as_json: bool, render: Any) -> None:
    click.echo(json.dumps(res, indent=1, ensure_ascii=False, default=str) if as_json else render(res))


@click.group()
def bench() -> None:
    """Measure recall quality and speed (LoCoMo, LongMemEval, synthetic stores)."""


@bench.command()
@click.option("--data", required=True, type=click.Path(exists=True, dir_okay=False), help="LoCoMo JSON file.")
@click.option("--config", "config", default="default", show_default=True,
              help="Recall preset: default, bm25, bm25-reference, vector, lexical, only:CH1,CH2.")
@click.option("--model", default=None, help="Embedder for vector channels (default: the configured one).")
@click.option("--set", "sets", multiple=True, help="Override a setting: rrf_k=10, weights.vector=0.8.")
@click.option("--limit", type=int, default=None, help="First N conversations only.")
@click.option("--home", default=None, metavar="DIR",
              help="Keep the store in DIR (a later run reuses its turns and vectors).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def locomo(data: str, config: str, model: str | None, sets: tuple[str, ...], limit: int | None,
           home: str | None, as_json: bool) -> None:
    """LoCoMo retrieval through the real write pipeline and search entry point."""
    h = harness("locomo")
    res = h.run(data, config=config, model=model, limit=limit, sets=h.overrides(list(sets)), home=home,
                progress=None if as_json else (lambda m: click.echo(m, err=True)))
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
@handle_errors
def speed(sizes: str, queries: int, model: str | None, as_json: bool, keep: str | None) -> None:
    """turn_start / search latency and vector memory on generated stores."""
    h = harness("recall_speed")
    res = h.run([int(s) for s in sizes.split(",") if s.strip()], queries=queries, model=model,
                progress=None if as_json else (lambda m: click.echo(m, err=True)), keep=keep)
    _out(res, as_json, h.render)


COMMANDS = [bench]
