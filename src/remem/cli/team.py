"""Team commands (issue 17, team use): ``remem team user add|list|remove``, ``remem team add|remove|list``,
``remem team member add|remove`` and ``remem share ID --team T``.

They run on the server's machine as its home (the CLI opens the store directly, the same database the
daemon serves, so a change counts from the daemon's next request on). A new user's token is printed
once, on stdout only: the store keeps its hash, nothing is logged.
"""

from __future__ import annotations

from typing import Any

import click

from . import count, emit, handle_errors, open_mem


@click.group("team")
def team() -> None:
    """Users with tokens of their own, and teams that share memory (owners user:NAME and team:TEAM)."""


@team.group("user")
def user() -> None:
    """Users of this server: each gets a token that reads its own and its teams' memories."""


@user.command("add")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def user_add(ctx: click.Context, name: str, as_json: bool) -> None:
    """Add user NAME and print its token (shown once; only its hash is kept)."""
    from .. import team as teams

    mem = open_mem(ctx)
    token = teams.add_user(mem.store, name)
    data = {"user": name.strip(), "owner": teams.user_owner(name.strip()), "token": token}

    def human(d: dict[str, Any]) -> None:
        click.echo(f"user {d['user']} added (its memory: {d['owner']}). Its token, shown only this once:")
        click.echo(d["token"])

    emit(data, as_json, human)


@user.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def user_list(ctx: click.Context, as_json: bool) -> None:
    """List users with their teams and how many tokens each holds."""
    rows = open_mem(ctx).store.users.users()

    def human(items: list[dict[str, Any]]) -> None:
        if not items:
            click.echo("no users (add one: remem team user add NAME)")
        for u in items:
            click.echo(f"{u['name']}\t{count(u['tokens'], 'token')}\tteams: {', '.join(u['teams']) or '-'}")

    emit(rows, as_json, human)


@user.command("token")
@click.argument("name")
@click.option("--replace", is_flag=True, help="Revoke the user's other tokens (a rotation).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def user_token(ctx: click.Context, name: str, replace: bool, as_json: bool) -> None:
    """Print a new token for user NAME (shown once); with --replace its other tokens stop working."""
    from .. import team as teams

    token, revoked = teams.new_user_token(open_mem(ctx).store, name, replace=replace)
    data = {"user": name.strip(), "token": token, "revoked": revoked}

    def human(d: dict[str, Any]) -> None:
        click.echo(f"a new token for {d['user']}" + (f" ({count(d['revoked'], 'other token')} revoked)"
                                                       if replace else "") + ", shown only this once:")
        click.echo(d["token"])

    emit(data, as_json, human)


@user.command("remove")
@click.argument("name")
@click.pass_context
@handle_errors
def user_remove(ctx: click.Context, name: str) -> None:
    """Remove user NAME: its tokens stop working at once; its memories stay until forgotten."""
    from .. import team as teams

    teams.remove_user(open_mem(ctx).store, name)
    click.echo(f"user {name.strip()} removed; its tokens are revoked")


@team.command("add")
@click.argument("name")
@click.option("--member", "members", multiple=True, metavar="USER", help="A member (repeat for more).")
@click.pass_context
@handle_errors
def team_add(ctx: click.Context, name: str, members: tuple[str, ...]) -> None:
    """Add team NAME with its members (every name is checked first; nothing is written on an error)."""
    from .. import team as teams

    got = teams.add_team(open_mem(ctx).store, name, list(members))
    click.echo(f"team {got['team']} added (shared memory: {got['owner']}); members: "
               f"{', '.join(got['members']) or '-'}")


@team.command("remove")
@click.argument("name")
@click.pass_context
@handle_errors
def team_remove(ctx: click.Context, name: str) -> None:
    """Remove team NAME and its memberships; what was shared with it stays until forgotten."""
    from .. import team as teams

    teams.remove_team(open_mem(ctx).store, name)
    click.echo(f"team {name.strip()} removed")


@team.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def team_list(ctx: click.Context, as_json: bool) -> None:
    """List teams with their members."""
    rows = open_mem(ctx).store.users.teams()

    def human(items: list[dict[str, Any]]) -> None:
        if not items:
            click.echo("no teams (add one: remem team add TEAM --member USER)")
        for t in items:
            click.echo(f"{t['name']}\tmembers: {', '.join(t['members']) or '-'}")

    emit(rows, as_json, human)


@team.group("member")
def member() -> None:
    """Add users to a team or take them out."""


@member.command("add")
@click.argument("team_name", metavar="TEAM")
@click.argument("users", nargs=-1, required=True)
@click.pass_context
@handle_errors
def member_add(ctx: click.Context, team_name: str, users: tuple[str, ...]) -> None:
    """Add USERS to TEAM (they read its shared memory from their next request on)."""
    from .. import team as teams

    n = teams.change_members(open_mem(ctx).store, team_name, list(users), add=True)
    click.echo(f"{count(n, 'member')} added to {team_name.strip()}")


@member.command("remove")
@click.argument("team_name", metavar="TEAM")
@click.argument("users", nargs=-1, required=True)
@click.pass_context
@handle_errors
def member_remove(ctx: click.Context, team_name: str, users: tuple[str, ...]) -> None:
    """Take USERS out of TEAM (they stop reading its memory at their next request)."""
    from .. import team as teams

    n = teams.change_members(open_mem(ctx).store, team_name, list(users), add=False)
    click.echo(f"{count(n, 'member')} removed from {team_name.strip()}")


@click.command("share")
@click.argument("turn_id", metavar="ID")
@click.option("--team", "team_name", required=True, metavar="TEAM", help="The team to share with.")
@click.option("--owner", default=None, help="Whose turn it is (default: the configured owner).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def share(ctx: click.Context, turn_id: str, team_name: str, owner: str | None, as_json: bool) -> None:
    """Share turn TURN_ID with TEAM: a copy under team:TEAM with an id of its own (sharing twice adds
    nothing; the private turn stays as it is). An active learned memory (m_…) is shared by sharing its
    evidence turns; the team's learner then holds it as the team's. A user shares through the REST
    API (POST /api/v1/share)."""
    from .. import team as teams

    got = teams.share(open_mem(ctx), turn_id, team_name, principal=teams.Principal(), owner=owner)

    def human(d: dict[str, Any]) -> None:
        if "shared_turns" in d:
            learned = d["learned"]
            click.echo(f"{d['id']}: {count(len(d['shared_turns']), 'evidence turn')} shared with {d['team']}; "
                       + (f"the team's memory is {learned['status']}" if learned else
                          "the team's learner did not derive it (not enough evidence in the team's scope)"))
            return
        verb = "already shared" if d["status"] == "duplicate" else "shared"
        click.echo(f"{d['id']} {verb} with {d['team']} as {d['shared_id']}")

    emit(got, as_json, human)


COMMANDS = [team, share]
