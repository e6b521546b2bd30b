"""OpenClaw: an extension that takes the ``memory`` plugin slot, plus the skill.

State dir ``$OPENCLAW_STATE_DIR`` or ``~/.openclaw``; config ``$OPENCLAW_CONFIG_PATH`` or
``<state>/openclaw.json`` (FORMATS.md §6). The extension lives in ``extensions/remem/``; the config
gets ``plugins.entries.remem`` (enabled, prompt injection and conversation access allowed) and
``plugins.slots.memory = "remem"``. The slot holds one provider: when another plugin holds it,
install asks (``replace``) and otherwise installs only the skill. Removal gives the slot back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .base import HookAgent, OwnedFile, skill_file
from .common import (
    Context,
    Result,
    load_manifest,
    read_json,
    remove_file,
    save_manifest,
    template,
    write_json,
    write_text,
)

PLUGIN_ID = "remem"


def _ext(name: str) -> OwnedFile:
    def render(ctx: Context, agent: str) -> str:
        return template(f"openclaw/{name}", HOOK_ARGV=json.dumps(ctx.hook_argv()))
    return OwnedFile(name, f"extensions/{PLUGIN_ID}/{name}", render)


class OpenClaw(HookAgent):
    agent = "openclaw"
    label = "OpenClaw"
    dir_var = "OPENCLAW_STATE_DIR"
    dir_default = ".openclaw"
    binaries = ("openclaw",)
    events = []
    extension = [_ext("index.js"), _ext("package.json"), _ext("openclaw.plugin.json")]
    owned = [skill_file()]

    def config_path(self, ctx: Context) -> Path:
        v = ctx.env.get("OPENCLAW_CONFIG_PATH")
        return Path(v).expanduser() if v else self.root(ctx) / "openclaw.json"

    def holder(self, cfg: dict[str, Any]) -> str:
        slots = (cfg.get("plugins") or {}).get("slots") or {}
        return str(slots.get("memory") or "") if isinstance(slots, dict) else ""

    def install(self, ctx: Context, *, replace: bool | None = None) -> Result:
        res = Result(self.agent, "install")
        path = self.config_path(ctx)
        cfg = read_json(path)
        holder = self.holder(cfg)
        self.install_files(ctx, res)
        if holder and holder != PLUGIN_ID and not replace:
            res.notes.append(f"OpenClaw's memory slot is held by {holder!r}; only the remem-memory skill was "
                             "installed. Install again with replace to make remem the memory plugin.")
            if replace is None:
                res.status = "needs_confirmation"
                res.notes.append(f"question: replace the memory plugin {holder!r} with remem?")
            return res
        root = self.root(ctx)
        for f in self.extension:
            write_text(root / f.rel, f.content(ctx, self.agent), res)
        plugins = dict(cfg.get("plugins") or {})
        entries = dict(plugins.get("entries") or {})
        entry = dict(entries.get(PLUGIN_ID) or {})
        entry["enabled"] = True
        entry["hooks"] = {**(entry.get("hooks") or {}), "allowPromptInjection": True, "allowConversationAccess": True}
        entries[PLUGIN_ID] = entry
        slots = dict(plugins.get("slots") or {})
        if holder != PLUGIN_ID:
            self.remember(ctx, "previous_slot", holder or "")
        slots["memory"] = PLUGIN_ID
        created = not path.exists()
        write_json(path, {**cfg, "plugins": {**plugins, "entries": entries, "slots": slots}}, res)
        if created:
            self.remember(ctx, "created", str(path))
        res.notes.append("Restart the OpenClaw gateway (`openclaw gateway restart`) to load remem.")
        return res

    def remove(self, ctx: Context) -> Result:
        res = Result(self.agent, "remove")
        root = self.root(ctx)
        for f in self.extension:
            remove_file(root / f.rel, res, prune_up_to=root)
        self.remove_files(ctx, res)
        path = self.config_path(ctx)
        cfg = read_json(path)
        plugins = dict(cfg.get("plugins") or {})
        if PLUGIN_ID in (plugins.get("entries") or {}) or self.holder(cfg) == PLUGIN_ID:
            m = load_manifest(ctx, self.agent)
            entries = {k: v for k, v in (plugins.get("entries") or {}).items() if k != PLUGIN_ID}
            slots = dict(plugins.get("slots") or {})
            if slots.get("memory") == PLUGIN_ID:
                prev = (m.get("previous_slot") or [""])[0]
                if prev:
                    slots["memory"] = prev
                else:
                    slots.pop("memory")
            for key, value in (("entries", entries), ("slots", slots)):
                if value:
                    plugins[key] = value
                else:
                    plugins.pop(key, None)
            new = {**cfg, "plugins": plugins} if plugins else {k: v for k, v in cfg.items() if k != "plugins"}
            if not new and str(path) in m.get("created", []):
                remove_file(path, res)
            else:
                write_json(path, new, res)
        save_manifest(ctx, self.agent, {})
        return res

    def status(self, ctx: Context) -> dict[str, Any]:
        out = super().status(ctx)
        root = self.root(ctx)
        out["files"].update({f.key: (root / f.rel).exists() for f in self.extension})
        try:
            cfg = read_json(self.config_path(ctx))
            out["memory_slot"] = self.holder(cfg)
        except Exception as e:  # noqa: BLE001
            out["error"] = str(e)
            out["memory_slot"] = ""
        out["installed"] = all(out["files"].values()) and out.get("memory_slot") == PLUGIN_ID
        out["partial"] = any(out["files"].values())
        return out
