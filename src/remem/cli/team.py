"""Team commands (issue 17, team use): ``remem team user add|list|remove``, ``remem team add|remove|list``,
``remem team member add|remove`` and ``remem share ID --team T``.

They run on the server's machine as its home (the CLI opens the store directly, the same database the
daemon serves, so a change counts from the daemon's next request on). A new user's token is printed
once, on stdout only: the store keeps its hash, nothing is logged.
"""

from __future__ import annotations

import time
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


# -- a laptop's link to a team server (remem.teamsync) ---------------------------------------------
def _share_rules(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for p in pairs:
        path, sep, name = p.rpartition("=")
        if not sep or not path.strip() or not name.strip():
            raise click.BadParameter(f"{p!r}: use FOLDER=TEAM", param_hint="--share")
        out[path.strip()] = name.strip()
    return out


@team.command("join")
@click.argument("url")
@click.option("--token", envvar="REMEM_TEAM_TOKEN", default=None,
              help="Your user token on that server (or REMEM_TEAM_TOKEN; asked for when omitted).")
@click.option("--share", "shares", multiple=True, metavar="FOLDER=TEAM",
              help="Share a local project with a team from now on (repeat for more).")
@click.option("--sync/--no-sync", "now", default=True, show_default=True, help="Sync once right away.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def team_join(ctx: click.Context, url: str, token: str | None, shares: tuple[str, ...], now: bool,
              as_json: bool) -> None:
    """Link this home to the team server at URL: your shared projects' turns go up, your teams'
    memories come down, and recall here reads both. The token is checked first and kept in
    REMEM_HOME/team-token (mode 0600)."""
    from .. import teamsync

    if not token:
        token = click.prompt("token", hide_input=True)
    mem = open_mem(ctx)
    data = teamsync.join(mem, url, token or "", projects=_share_rules(shares))
    if now:
        data["sync"] = teamsync.sync(mem)

    def human(d: dict[str, Any]) -> None:
        click.echo(f"joined {d['url']} as {d['user']}; teams: {', '.join(d['teams']) or '-'}")
        for local, rule in d["projects"].items():
            click.echo(f"  shares {local} with {rule['team']}")
        if not d["teams"]:
            click.echo("  (you belong to no team yet: nothing comes down until you do)")
        if "sync" in d:
            _echo_sync(d["sync"])

    emit(data, as_json, human)


def _echo_sync(d: dict[str, Any]) -> None:
    up = sum(v.get("sent", 0) for v in d["pushed"].values())
    down = sum(v.get("written", 0) for v in d["pulled"].values())
    gone = sum(v.get("forgotten", 0) for v in d["pulled"].values())
    learned = sum(v.get("updated", 0) for v in d["learned"].values())
    click.echo(f"synced with {d['url']}: {count(up, 'turn')} up, {count(down, 'turn')} down, "
               f"{count(gone, 'forgotten turn')}, {count(learned, 'learned memory', 'learned memories')} updated")
    for c in d["conflicts"]:
        click.echo(f"  conflict: {c['id']} ({c['owner']}) kept {c['kept']}; the server has "
                   + (f"{c['server']['status']}: {c['server']['text']!r}" if c["server"] else "removed it"))


@team.command("sync")
@click.option("--push/--no-push", default=True, show_default=True, help="Send the shared projects' new turns.")
@click.option("--pull/--no-pull", default=True, show_default=True, help="Fetch the teams' turns and learned memories.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def team_sync(ctx: click.Context, push: bool, pull: bool, as_json: bool) -> None:
    """Sync with the team server now (the daemon also does it every team.sync_interval seconds).
    Safe to interrupt and repeat: nothing is lost or doubled."""
    from .. import teamsync

    emit(teamsync.sync(open_mem(ctx), push=push, pull=pull), as_json, _echo_sync)


@team.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
@handle_errors
def team_status(ctx: click.Context, as_json: bool) -> None:
    """The team server this home is linked to, its shared projects, what waits to go up, the last
    sync and the conflicts it reported (no network)."""
    from .. import teamsync

    def human(d: dict[str, Any]) -> None:
        if not d["joined"]:
            click.echo("not joined to a team server (remem team join URL --token T)")
            return
        click.echo(f"{d['url']} as {d['user']}; teams: {', '.join(d['teams']) or '-'}")
        for local, rule in d["projects"].items():
            click.echo(f"  {local} -> {rule['team']} as {rule['as']!r}: {count(d['waiting'][local], 'turn')} to send")
        if not d["projects"]:
            click.echo("  no shared projects (remem team project add FOLDER --team T)")
        last = d.get("last")
        click.echo(f"last sync: {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(last['at']))}, "
                   f"{count(last['pushed'], 'turn')} up, {count(last['pulled'], 'turn')} down" if last else
                   "never synced")
        err = d.get("last_error")
        if err and (not last or float(err.get("at") or 0) > float(last.get("at") or 0)):
            click.echo(f"the last try failed: {err['error']}")
        for c in d["conflicts"]:
            click.echo(f"  conflict: {c['id']} ({c['owner']}) kept {c['kept']}")
        if last and not d["conflicts"]:
            click.echo("no conflicts")

    emit(teamsync.status(open_mem(ctx)), as_json, human)


@team.command("leave")
@click.option("--forget", is_flag=True, help="Also delete the teams' memories this home holds.")
@click.pass_context
@handle_errors
def team_leave(ctx: click.Context, forget: bool) -> None:
    """Unlink this home from its team server (its token file goes; the server keeps what was sent)."""
    from .. import teamsync

    got = teamsync.leave(open_mem(ctx), forget=forget)
    head = "left the team server" if got["left"] else "not joined to a team server"
    if forget:
        click.echo(f"{head}; {count(got['forgotten'], 'team turn')} deleted here")
    elif got["owners"]:
        click.echo(f"{head}; the teams' memories stay here, no longer recalled ({', '.join(got['owners'])}): "
                   "remem team leave --forget deletes them")
    else:
        click.echo(head)


@team.group("project")
def project() -> None:
    """Which local projects this home shares with which team (remem team join first)."""


@project.command("add")
@click.argument("folder")
@click.option("--team", "team_name", required=True, help="The team that gets this project's turns.")
@click.option("--as", "name", default=None, help="The team's name for it (default: the folder's name).")
@click.pass_context
@handle_errors
def project_add(ctx: click.Context, folder: str, team_name: str, name: str | None) -> None:
    """Share project FOLDER with a team: its turns, past and new, go up at each sync."""
    from .. import teamsync

    got = teamsync.add_project(open_mem(ctx), folder, team_name, name=name)
    click.echo(f"{got['project']} is shared with {got['team']} as {got['as']!r} from the next sync on")


@project.command("remove")
@click.argument("folder")
@click.pass_context
@handle_errors
def project_remove(ctx: click.Context, folder: str) -> None:
    """Stop sharing project FOLDER (what the team has of it stays on the server)."""
    from .. import teamsync

    if not teamsync.remove_project(open_mem(ctx), folder):
        raise click.UsageError(f"{folder} is not shared (remem team status lists the shared projects)")
    click.echo(f"{folder} is no longer shared")


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
