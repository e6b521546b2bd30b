"""``remem config``: show, list, read and change settings. What each key is — type, default,
allowed values, environment variable, reason — comes from the model in ``remem/settings.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .. import config as configmod
from ..config import ConfigError
from ..errors import UndeclaredSetting

if TYPE_CHECKING:
    from .. import settings as model
from . import emit, handle_errors


def _load(ctx: click.Context) -> configmod.Config:
    return configmod.load(ctx.ensure_object(dict).get("home"))


def _source(cfg: configmod.Config, key: str) -> str:
    if key in cfg.env_used:
        return f"environment variable {cfg.env_used[key]}"
    file = dict(cfg.file_values)
    if isinstance(file.get("database"), str):
        file["database"] = {"url": file["database"]}
    try:
        configmod._get(file, key)
    except KeyError:
        return "default"
    return str(cfg.path)


def _rows(cfg: configmod.Config, prefix: str) -> list[dict[str, Any]]:
    from .. import settings as model

    out = []
    for s in model.SPECS.values():
        if s.key.startswith("agents.<id>.") or not (s.key == prefix or s.key.startswith(prefix)):
            continue
        out.append(_row(cfg, s.key, s))
    if not out:
        raise ConfigError(f"no setting starts with {prefix!r} (`remem config list` shows them all)")
    return out


def _row(cfg: configmod.Config, key: str, s: model.Spec | None) -> dict[str, Any]:
    from .. import settings as model

    value = cfg.get(key)
    if key in model.SECRET_KEYS and value:
        value = model.MASK
    elif isinstance(value, dict):
        value = model.masked(value, key)
    row: dict[str, Any] = {"key": key, "value": value, "source": _source(cfg, key)}
    if s is not None:
        row.update(type=s.type, default=s.default, allowed=s.allowed, env=s.env, reason=s.reason)
    return row


def _human(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        env = f"; {r['env']}" if r.get("env") else ""
        click.echo(f"{r['key']} = {_shown(r['value'])}   ({r.get('type', 'section')}, default "
                   f"{_shown(r.get('default'))}{env}; from {r['source']})")
        if r.get("reason"):
            click.echo(f"    {r['reason']}; allowed: {r['allowed']}")


def _shown(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return '""' if v == "" else str(v)


@click.group("config")
def config_group() -> None:
    """Show, read and change settings (config.yaml; REMEM_* environment variables win)."""


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def config_show(ctx: click.Context, as_json: bool) -> None:
    """Print every setting with its effective value."""
    import yaml

    from .. import settings as model

    values = model.masked(configmod._plain(_load(ctx).values))
    emit(values, as_json, lambda d: click.echo(yaml.safe_dump(d, sort_keys=True, allow_unicode=True)))


@config_group.command("list")
@click.argument("prefix", required=False, default="")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def config_list(ctx: click.Context, prefix: str, as_json: bool) -> None:
    """Every setting (or those under PREFIX, e.g. hooks): value, type, default, where the value comes
    from, its environment variable, what is allowed and why the default is what it is."""
    emit(_rows(_load(ctx), prefix), as_json, _human)


@config_group.command("get")
@click.argument("key")
@click.option("--json", "as_json", is_flag=True, help="Print the value with its type, default, source and reason.")
@click.pass_context
@handle_errors
def config_get(ctx: click.Context, key: str, as_json: bool) -> None:
    """Print one setting (dotted key, e.g. recall.token_budget)."""
    from .. import settings as model

    cfg = _load(ctx)
    try:
        value = cfg.get(key)
    except UndeclaredSetting:
        raise ConfigError(f"unknown setting: {key} (`remem config list` shows them all)") from None
    value = model.masked(value, key) if isinstance(value, dict) else \
        model.MASK if key in model.SECRET_KEYS and value else value
    if as_json:
        emit(_row(cfg, key, model.spec(key)), True)
        return
    click.echo(_shown(value) if not isinstance(value, dict) else json.dumps(value, ensure_ascii=False))


@config_group.command("set")
@click.argument("key")
@click.argument("value")
@click.pass_context
@handle_errors
def config_set(ctx: click.Context, key: str, value: str) -> None:
    """Change one setting in config.yaml (checked first: a bad value changes nothing). Works on a
    config.yaml whose other values are broken only to fix them: the file must be valid after."""
    from . import open_mem

    try:
        cfg = open_mem(ctx).config
    except ConfigError:     # the file holds a bad value: let `set` fix it (the result is checked)
        home = configmod.home_dir(ctx.ensure_object(dict).get("home"))
        cfg = configmod.Config.unchecked(Path(home), dict(os.environ))
    from .. import settings as model

    stored = cfg.set(key, value)
    click.echo(f"{key} = {model.MASK if key in model.SECRET_KEYS and stored else _shown(stored)}")
    if key in cfg.env_used:
        click.echo(f"note: {cfg.env_used[key]} is set in this environment and wins over config.yaml", err=True)
