"""Privacy commands: ``remem incognito [on|off]`` (the home's incognito switch, as in the viewer)."""

from __future__ import annotations

from typing import Any

import click

from . import emit, fail, handle_errors


@click.command("incognito")
@click.argument("switch", required=False, type=click.Choice(["on", "off"]))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def incognito(ctx: click.Context, switch: str | None, as_json: bool) -> None:
    """Pause memory for every agent of this home (on) or resume it (off); no argument: show it.

    While on, no hook captures or recalls anything and `remem sync` skips what the agents wrote
    meanwhile, also after it is switched off. One session only: type /remem-incognito in the agent."""
    from .. import privacy
    from ..config import home_dir

    home = home_dir(ctx.ensure_object(dict).get("home")).expanduser().resolve()
    if switch is not None:
        try:
            privacy.set_paused(home, switch == "on")
        except privacy.PrivacyFileError as e:
            fail(str(e))
    data = privacy.status(home)

    def human(d: dict[str, Any]) -> None:
        if d["incognito"]:
            click.echo("incognito: ON for every agent (nothing captured, learned or recalled); "
                       "`remem incognito off` resumes")
        else:
            click.echo("incognito: off (agents are remembered as usual)")

    emit(data, as_json, human)


COMMANDS = [incognito]
