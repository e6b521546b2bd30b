"""What every installer shares: the hook command, merging into JSON/TOML/Markdown config
without touching foreign entries, backups, templates, and the result record.

Rules every installer follows:
- write only what remem owns: its own hook entries (recognised by their command), its own files,
  its own marked block in a shared Markdown file;
- back up a file before changing it (``<file>.remem-bak-<time>``, the newest few kept);
- installing twice changes nothing the second time; removing takes out exactly remem's entries
  and files and leaves everything else, including memories already imported.

Every hook config points at one stable file, the launcher ``$REMEM_HOME/bin/remem-hook``: a small
``sh`` script that execs the interpreter remem runs on with its hook entry (skills and slash commands
call ``$REMEM_HOME/bin/remem`` the same way). Moving or re-creating the virtualenv, or upgrading Python,
then needs only the launchers rewritten, which ``remem hooks install`` and ``remem up`` do
(:func:`write_launcher`); the agents' configs stay as they are.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ...errors import RememError

KEEP_BACKUPS = 5
BEGIN = "<!-- remem:begin (managed by `remem hooks install`; remove with `remem hooks remove`) -->"
END = "<!-- remem:end -->"
_BLOCK = re.compile(r"\n*<!-- remem:begin[^\n]*-->.*?<!-- remem:end -->\n?", re.S)
# a command line that runs remem's hook, however it was spelled (fixtures use `remem hook …`)
_REMEM_CMD = re.compile(r"(?:^|[\s/'\"])(?:remem(?:-hook)?\s+hook\b|-m\s+remem\.hook\b|remem-hook\.sh\b"
                       r"|remem[/\\]hook\.py\b|bin[/\\]remem-hook(?=$|[\s'\"]))")
HOOK_FILE = Path(__file__).resolve().parents[2] / "hook.py"   # run as a file: the fastest start
LAUNCHER = Path("bin") / "remem-hook"                         # under the remem home: what hooks run
CLI_LAUNCHER = Path("bin") / "remem"                          # what skills and slash commands run


class InstallError(RememError):
    """A config file remem cannot safely change (unparseable, wrong shape). Nothing was written."""


@dataclass
class Result:
    agent: str
    action: str
    status: str = "ok"                   # ok | needs_confirmation | error | not_supported
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "action": self.action, "status": self.status, "changed": self.changed,
                "unchanged": self.unchanged, "removed": self.removed, "backups": self.backups,
                "notes": self.notes, "error": self.error}


@dataclass
class Context:
    """Everything an installer needs: the agent's environment and the remem home it wires to."""

    env: dict[str, str]
    remem_home: Path
    python: str = field(default_factory=lambda: sys.executable)   # the interpreter running now
    pin_home: bool = True

    @property
    def home(self) -> Path:
        return Path(self.env.get("HOME") or Path.home()).expanduser()

    def path(self, var: str, default: Path) -> Path:
        v = self.env.get(var)
        return Path(v).expanduser() if v else default

    # -- the commands agents run ---------------------------------------------------------
    @property
    def launcher(self) -> Path:
        return self.remem_home / LAUNCHER

    @property
    def cli_launcher(self) -> Path:
        return self.remem_home / CLI_LAUNCHER

    def hook_argv(self) -> list[str]:
        """What an agent runs for a hook: the stable launcher (see :func:`write_launcher`)."""
        return [str(self.launcher)]

    def entry_argv(self) -> list[str]:
        """What the launcher runs: this interpreter on the hook entry file (no package import first)."""
        argv = [self.python, str(HOOK_FILE)]
        if self.pin_home:
            argv += ["--home", str(self.remem_home)]
        return argv

    def hook_command(self, agent: str, event: str) -> str:
        return " ".join(shlex.quote(a) for a in [*self.hook_argv(), agent, event])

    def cli_command(self) -> str:
        """How a skill calls the remem CLI: the command launcher (it pins the home when needed)."""
        return shlex.quote(str(self.cli_launcher))


def _launcher_text(ctx: Context, what: str, argv: list[str]) -> str:
    python = shlex.quote(ctx.python)
    who = "the agents' hook configs" if what == "hook" else "skills and slash commands"
    return (
        "#!/bin/sh\n"
        f"# remem's {what} launcher, run by {who}. Written by `remem hooks install`\n"
        "# and `remem up`, which rewrite it when remem's Python moves; the agents' configs stay as they are.\n"
        f"if [ -x {python} ]; then\n"
        f"  exec {' '.join(shlex.quote(a) for a in argv)} \"$@\"\n"
        "fi\n"
        f"echo {shlex.quote(f'remem: {ctx.python} is gone (moved or removed); run: remem hooks install')} >&2\n"
        # a hook must never block or fail the agent's turn; a command (a skill's call) reports the error
        + ("exit 0\n" if what == "hook" else "exit 127\n"))


def launcher_texts(ctx: Context) -> dict[Path, str]:
    cli = [ctx.python, "-m", "remem", *(["--home", str(ctx.remem_home)] if ctx.pin_home else [])]
    return {ctx.launcher: _launcher_text(ctx, "hook", ctx.entry_argv()),
            ctx.cli_launcher: _launcher_text(ctx, "command", cli)}


def write_launcher(ctx: Context, res: Result | None = None) -> bool:
    """Write (or rewrite) ``$REMEM_HOME/bin/remem-hook`` (hooks) and ``$REMEM_HOME/bin/remem`` (skills)
    for the interpreter in ``ctx``. True if either changed."""
    res = res if res is not None else Result("remem", "launcher")
    changed = [write_text(path, text, res, mode=0o755, keep_backup=False)
               for path, text in launcher_texts(ctx).items()]
    return any(changed)


def is_remem_command(command: Any) -> bool:
    return isinstance(command, str) and bool(_REMEM_CMD.search(command))


# -- files ------------------------------------------------------------------------------
def backup(path: Path, res: Result) -> None:
    if not path.exists():
        return
    stamp = time.strftime("%Y%m%dT%H%M%S")
    dest = path.with_name(f"{path.name}.remem-bak-{stamp}")
    n = 1
    while dest.exists():
        dest = path.with_name(f"{path.name}.remem-bak-{stamp}-{n}")
        n += 1
    shutil.copy2(path, dest)
    res.backups.append(str(dest))
    old = sorted(path.parent.glob(f"{path.name}.remem-bak-*"), key=lambda p: p.stat().st_mtime)
    for p in old[:-KEEP_BACKUPS]:
        try:
            p.unlink()
        except OSError:
            pass


def write_text(path: Path, text: str, res: Result, *, mode: int | None = None, keep_backup: bool = True) -> bool:
    """Write ``text`` if it differs; back up the old content first. Returns True if written."""
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = None
    if old == text:
        res.unchanged.append(str(path))
        if mode is not None and (path.stat().st_mode & 0o777) != mode:
            os.chmod(path, mode)
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    if old is not None and keep_backup:
        backup(path, res)
    tmp = path.with_name(f".{path.name}.remem-tmp")
    tmp.write_text(text, encoding="utf-8")
    if mode is not None:
        os.chmod(tmp, mode)
    elif path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)
    res.changed.append(str(path))
    return True


def remove_file(path: Path, res: Result, *, prune_up_to: Path | None = None) -> None:
    """Delete a file remem owns, then empty parent directories up to (not including) ``prune_up_to``."""
    if not path.exists():
        return
    path.unlink()
    res.removed.append(str(path))
    if prune_up_to is None:
        return
    parent = path.parent
    while parent != prune_up_to and prune_up_to in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent


def read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as e:
        raise InstallError(f"{path} is not valid JSON ({e}); left untouched — fix it, then run again") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; left untouched")
    return data


def dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_json(path: Path, data: dict[str, Any], res: Result, *, mode: int | None = None) -> bool:
    return write_text(path, dump_json(data), res, mode=mode)


# -- Claude-shaped hook tables ({"hooks": {Event: [{matcher?, hooks: [{type, command}]}]}}) ----
def strip_hooks(hooks: dict[str, Any]) -> dict[str, Any]:
    """``hooks`` without remem's handlers; groups and events left empty by that are dropped."""
    out: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            out[event] = groups
            continue
        kept = []
        touched = False
        for g in groups:
            if isinstance(g, dict) and isinstance(g.get("hooks"), list):
                handlers = [h for h in g["hooks"] if not (isinstance(h, dict) and is_remem_command(h.get("command")))]
                if len(handlers) != len(g["hooks"]):
                    touched = True
                    if not handlers:
                        continue
                    g = {**g, "hooks": handlers}
            elif isinstance(g, dict) and is_remem_command(g.get("command")):   # Cursor's flat shape
                touched = True
                continue
            kept.append(g)
        if kept or not touched:
            out[event] = kept
    return out


def merge_hooks(cfg: dict[str, Any], ours: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """``cfg`` with remem's hook groups replaced by ``ours`` (foreign entries keep their order)."""
    hooks = cfg.get("hooks")
    if hooks is None:
        hooks = {}
    if not isinstance(hooks, dict):
        raise InstallError("the existing \"hooks\" setting is not an object; left untouched")
    merged = strip_hooks(hooks)
    for event, groups in ours.items():
        existing = merged.get(event)
        if existing is not None and not isinstance(existing, list):
            raise InstallError(f"hooks.{event} is not a list; left untouched")
        merged[event] = [*(existing or []), *groups]
    return {**cfg, "hooks": merged}


def remem_events(cfg: dict[str, Any]) -> list[str]:
    """Events under ``cfg["hooks"]`` that have a remem handler."""
    found = []
    hooks = cfg.get("hooks")
    for event, groups in (hooks.items() if isinstance(hooks, dict) else []):
        for g in groups if isinstance(groups, list) else []:
            if not isinstance(g, dict):
                continue
            handlers: list[Any] = g["hooks"] if isinstance(g.get("hooks"), list) else [g]
            if any(isinstance(h, dict) and is_remem_command(h.get("command")) for h in handlers):
                found.append(event)
                break
    return found


# -- Markdown notes (CLAUDE.md, AGENTS.md) -------------------------------------------------
def with_block(text: str, body: str) -> str:
    block = f"{BEGIN}\n{body.strip()}\n{END}\n"
    if _BLOCK.search(text):
        return _BLOCK.sub(lambda m: ("\n\n" if m.start() > 0 else "") + block, text, count=1)
    return block if not text.strip() else text.rstrip("\n") + "\n\n" + block


def without_block(text: str) -> str:
    out = _BLOCK.sub("\n", text)
    return out.strip("\n") + "\n" if out.strip() else ""


def install_note(path: Path, body: str, res: Result) -> None:
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = ""
    write_text(path, with_block(old, body), res)


def remove_note(path: Path, res: Result) -> None:
    try:
        old = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    if BEGIN.split(" (")[0] not in old:
        return
    new = without_block(old)
    if not new.strip():
        remove_file(path, res)
    else:
        write_text(path, new, res)
        res.removed.append(f"{path} (remem note)")


def has_note(path: Path) -> bool:
    try:
        return "<!-- remem:begin" in path.read_text(encoding="utf-8")
    except OSError:
        return False


# -- templates ----------------------------------------------------------------------------
def template(name: str, **values: str) -> str:
    """Package data under ``integrations/templates/`` with ``{{KEY}}`` placeholders filled."""
    text = (resources.files("remem.integrations") / "templates" / name).read_text(encoding="utf-8")
    for k, v in values.items():
        text = text.replace("{{" + k + "}}", v)
    return text


def skill_text(ctx: Context, agent: str) -> str:
    return template("skill/SKILL.md", REMEM=ctx.cli_command(), AGENT=agent)


def note_text(ctx: Context, agent: str, *, resume: bool = True) -> str:
    return template("notes/agent_note.md", REMEM=ctx.cli_command(), AGENT=agent,
                    RESUME=("Type `/remem-resume <words>` to list past episodes and answer `1`–`5` to "
                            "continue one. `/remem-incognito` keeps the rest of a session out of memory "
                            "(`/remem-incognito off` ends it)." if resume else ""))


# -- what remem created (so removal deletes a config file only if remem made it) ----------------
def manifest_path(ctx: Context, agent: str) -> Path:
    return ctx.remem_home / "integrations" / f"{agent}.json"


def load_manifest(ctx: Context, agent: str) -> dict[str, Any]:
    try:
        got = json.loads(manifest_path(ctx, agent).read_text(encoding="utf-8"))
        return got if isinstance(got, dict) else {}
    except (OSError, ValueError):
        return {}


def save_manifest(ctx: Context, agent: str, data: dict[str, Any]) -> None:
    path = manifest_path(ctx, agent)
    if not data:
        try:
            path.unlink()
        except OSError:
            pass
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
