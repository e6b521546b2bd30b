"""The installer contract and the shape most agents share: a JSON file of command hooks, a few
files remem owns outright (skill, command, script), and a marked note in a shared Markdown file.

An agent module subclasses :class:`HookAgent` and sets its paths and events; agents whose
integration is a plugin (OpenCode, OpenClaw, Hermes) or a skill alone override ``install`` /
``remove`` / ``status`` but keep the same result shape.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .common import (
    Context,
    Result,
    has_note,
    install_note,
    load_manifest,
    merge_hooks,
    note_text,
    read_json,
    remem_events,
    remove_file,
    remove_note,
    save_manifest,
    skill_text,
    strip_hooks,
    write_json,
    write_text,
)


class Installer(Protocol):
    agent: str
    label: str

    def detect(self, ctx: Context) -> bool: ...
    def install(self, ctx: Context, *, replace: bool | None = None) -> Result: ...
    def remove(self, ctx: Context) -> Result: ...
    def status(self, ctx: Context) -> dict[str, Any]: ...


@dataclass(frozen=True)
class OwnedFile:
    """A file remem writes whole and deletes on removal (path relative to the agent's dir)."""

    key: str
    rel: str
    content: Callable[[Context, str], str]
    mode: int | None = None


def skill_file(rel: str = "skills/remem-memory/SKILL.md") -> OwnedFile:
    return OwnedFile("skill", rel, lambda ctx, agent: skill_text(ctx, agent))


class HookAgent:
    agent = ""
    label = ""
    dir_var = ""                   # environment variable naming the agent's config dir
    dir_default = ""               # relative to HOME
    binaries: tuple[str, ...] = ()
    hooks_file = "settings.json"
    events: list[tuple[str, str, str | None]] = []   # (agent event, remem event argument, matcher)
    timeout: int | None = 60       # in the agent's unit (seconds, or ms for Gemini)
    owned: list[OwnedFile] = []
    note_file: str | None = None

    # -- paths -----------------------------------------------------------------------------
    def root(self, ctx: Context) -> Path:
        default = ctx.home / self.dir_default
        return ctx.path(self.dir_var, default) if self.dir_var else default

    def hooks_path(self, ctx: Context) -> Path:
        return self.root(ctx) / self.hooks_file

    def detect(self, ctx: Context) -> bool:
        if self.root(ctx).is_dir():
            return True
        return any(shutil.which(b, path=ctx.env.get("PATH")) for b in self.binaries)

    # -- hooks -----------------------------------------------------------------------------
    def handler(self, ctx: Context, arg: str) -> dict[str, Any]:
        h: dict[str, Any] = {"type": "command", "command": ctx.hook_command(self.agent, arg)}
        if self.timeout:
            h["timeout"] = self.timeout
        return h

    def hook_groups(self, ctx: Context) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for event, arg, matcher in self.events:
            group: dict[str, Any] = {"hooks": [self.handler(ctx, arg)]}
            if matcher:
                group = {"matcher": matcher, **group}
            out[event] = [group]
        return out

    def merged_config(self, ctx: Context, cfg: dict[str, Any]) -> dict[str, Any]:
        return merge_hooks(cfg, self.hook_groups(ctx))

    def stripped_config(self, cfg: dict[str, Any]) -> dict[str, Any]:
        new = {**cfg, "hooks": strip_hooks(cfg.get("hooks") or {})}
        if not new["hooks"]:
            new.pop("hooks")
        return new

    # -- install / remove / status ---------------------------------------------------------
    def install(self, ctx: Context, *, replace: bool | None = None) -> Result:
        res = Result(self.agent, "install")
        path = self.hooks_path(ctx)
        if self.events:
            created = not path.exists()
            write_json(path, self.merged_config(ctx, read_json(path)), res)
            if created:
                self.remember(ctx, "created", str(path))
        self.install_files(ctx, res)
        self.after_install(ctx, res)
        return res

    def install_files(self, ctx: Context, res: Result) -> None:
        root = self.root(ctx)
        for f in self.owned:
            write_text(root / f.rel, f.content(ctx, self.agent), res, mode=f.mode)
        if self.note_file:
            install_note(root / self.note_file, note_text(ctx, self.agent), res)

    def after_install(self, ctx: Context, res: Result) -> None:
        """Agent-specific extra steps (feature switches, notes for the user)."""

    def remove(self, ctx: Context) -> Result:
        res = Result(self.agent, "remove")
        path = self.hooks_path(ctx)
        if self.events:
            cfg = read_json(path)
            if remem_events(cfg):
                new = self.stripped_config(cfg)
                ours_only = new == self.stripped_config(self.merged_config(ctx, {}))
                if ours_only and str(path) in load_manifest(ctx, self.agent).get("created", []):
                    remove_file(path, res)
                else:
                    write_json(path, new, res)
        self.remove_files(ctx, res)
        self.after_remove(ctx, res)
        save_manifest(ctx, self.agent, {})
        return res

    def remember(self, ctx: Context, key: str, value: str) -> None:
        """Record something remem created (a config file, a switch) so removal undoes only that."""
        m = load_manifest(ctx, self.agent)
        items = m.setdefault(key, [])
        if value not in items:
            items.append(value)
            save_manifest(ctx, self.agent, m)

    def remove_files(self, ctx: Context, res: Result) -> None:
        root = self.root(ctx)
        for f in self.owned:
            remove_file(root / f.rel, res, prune_up_to=root)
        if self.note_file:
            remove_note(root / self.note_file, res)

    def after_remove(self, ctx: Context, res: Result) -> None:
        """Agent-specific extra steps undone."""

    def status(self, ctx: Context) -> dict[str, Any]:
        root = self.root(ctx)
        err = ""
        events: list[str] = []
        if self.events:
            try:
                events = remem_events(read_json(self.hooks_path(ctx)))
            except Exception as e:  # noqa: BLE001 - status reports problems, never raises
                err = str(e)
        files = {f.key: (root / f.rel).exists() for f in self.owned}
        if self.note_file:
            files["note"] = has_note(root / self.note_file)
        want = [e for e, _, _ in self.events]
        return {"config_dir": str(root), "hooks": events, "hooks_expected": want, "files": files,
                "error": err, "installed": set(want) <= set(events) and all(files.values()),
                "partial": bool(events) or any(files.values())}
