"""The ``remem`` command. Each command group lives in its own module; they and any plugin's commands
register through the ``register_commands`` hook (``remem.builtins``, docs/plugins.md)."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from ..config import ConfigError
from ..errors import RememError
from ..ingest.normalize import InputError
from ..scope import ScopeError
from ..store import ENGINE_ERRORS, StoreError

# RememError is every failure remem raises on purpose; the rest are the library's own expected ones
EXPECTED: tuple[type[Exception], ...] = (RememError, InputError, StoreError, ConfigError, ScopeError, ValueError, OSError,
                                         *ENGINE_ERRORS)


def count(n: int, one: str, many: str | None = None) -> str:
    """``count(1, "memory", "memories")`` → "1 memory"; every count a command prints goes through here."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"remem: error: {message}", err=True)
    sys.exit(code)


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn expected failures into one clear line and a non-zero exit, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except click.exceptions.Exit:
            raise
        except (click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except BrokenPipeError:
            _reader_left()
        except EXPECTED as e:
            msg = str(e) or type(e).__name__
            if isinstance(e, OSError) and e.strerror:
                msg = f"{e.strerror}: {e.filename}" if e.filename else e.strerror
            fail(msg.splitlines()[0])

    return wrapper


def _reader_left() -> None:
    """The reader of our output went away (``remem sources | head``): stop quietly, as a Unix tool
    does, with 141 (128 + SIGPIPE); stdout goes to /dev/null so the interpreter's final flush
    cannot raise again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(141)


def emit(data: Any, as_json: bool, human: Callable[[Any], None] | None = None) -> None:
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=None, default=str))
    elif human is not None:
        human(data)
    else:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def open_mem(ctx: click.Context) -> Any:
    from ..core import Remem

    obj = ctx.ensure_object(dict)
    if "mem" not in obj:
        obj["mem"] = Remem(obj.get("home"))
        ctx.call_on_close(obj["mem"].close)
    return obj["mem"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", envvar="REMEM_HOME", type=click.Path(file_okay=False), default=None,
              help="Data home (default: $REMEM_HOME or ~/.remem).")
@click.version_option(package_name="remem")
@click.pass_context
def cli(ctx: click.Context, home: str | None) -> None:
    """remem: one long-term memory for all your AI coding agents."""
    ctx.ensure_object(dict)["home"] = home


def _register() -> None:
    """Every subcommand comes from the plugin contract (``register_commands``): the built-in groups of
    this package (``remem.builtins``) and any plugin's."""
    from .. import plugins

    for command in plugins.cli_commands().values():
        cli.add_command(command)


_register()


def _warn_plugins(seen: set[str]) -> None:
    from .. import plugins

    for problem in plugins.problems():
        if problem not in seen:
            seen.add(problem)
            click.echo(f"remem: warning: {problem} (skipped)", err=True)


def main() -> None:
    seen: set[str] = set()
    _warn_plugins(seen)
    try:
        cli(prog_name="remem")
    finally:
        _warn_plugins(seen)    # a registry first read by the command (sources, embedders, ...)
