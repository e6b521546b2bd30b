"""``remem plugins``: what the plugin contract loaded, who registered each name, and what was skipped."""

from __future__ import annotations

from typing import Any

import click

from . import emit, handle_errors


def report() -> dict[str, Any]:
    from .. import plugins

    registries = {kind: plugins.origins(kind) for kind in plugins.KINDS}
    channels = plugins.recall_channels()
    return {
        "plugins": plugins.loaded(),
        "registries": registries,                 # kind → name → the plugin that registered it
        "recall_channels": [{"name": c.name, "weight": c.weight, "gated": c.gated, "family": c.family,
                             "layer": c.layer} for c in channels.values()],
        "problems": plugins.problems(),
    }


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def plugins_cmd(as_json: bool) -> None:
    """List the plugins remem loaded, what each registered, and any that were skipped."""
    data = report()

    def human(d: dict[str, Any]) -> None:
        for p in d["plugins"]:
            click.echo(f"{p['name']:<24} {p['distribution']}")
            theirs = {kind: sorted(n for n, o in names.items() if o == p["name"])
                      for kind, names in d["registries"].items()}
            for kind, names in theirs.items():
                if names:
                    click.echo(f"{'':<4}{kind.replace('_', ' ')}: {', '.join(names)}")
        for problem in d["problems"]:
            click.echo(f"skipped: {problem}")

    emit(data, as_json, human)


COMMANDS = [plugins_cmd]
