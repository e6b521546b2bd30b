"""Hermes Agent: a memory-provider plugin, a ``/remem-resume`` command plugin, ``memory.provider``.

Home ``$HERMES_HOME`` or ``~/.hermes`` (FORMATS.md §5). User plugins live in ``plugins/<name>/``
(``plugin.yaml`` + ``__init__.py`` with ``register(ctx)``); ``memory.provider`` in ``config.yaml``
selects the one active external provider, so install asks before replacing another one and
otherwise installs only the skill. ``config.yaml`` is edited as text (one line), never re-dumped,
so the user's comments and layout survive.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .base import HookAgent, OwnedFile, skill_file
from .common import (
    Context,
    InstallError,
    Result,
    load_manifest,
    remove_file,
    save_manifest,
    template,
    write_text,
)

PROVIDER = "remem"


def _tpl(name: str) -> Any:
    def render(ctx: Context, agent: str) -> str:
        return template(f"hermes/{name}", HOOK_ARGV=json.dumps(ctx.hook_argv()))
    return render


class Hermes(HookAgent):
    agent = "hermes"
    label = "Hermes Agent"
    dir_var = "HERMES_HOME"
    dir_default = ".hermes"
    binaries = ("hermes",)
    events = []
    plugin = [
        OwnedFile("provider", "plugins/remem/__init__.py", _tpl("provider_init.py.txt")),
        OwnedFile("provider_manifest", "plugins/remem/plugin.yaml", _tpl("provider_plugin.yaml.txt")),
        OwnedFile("resume", "plugins/remem_resume/__init__.py", _tpl("resume_init.py.txt")),
        OwnedFile("resume_manifest", "plugins/remem_resume/plugin.yaml", _tpl("resume_plugin.yaml.txt")),
    ]
    owned = [skill_file()]

    def config_path(self, ctx: Context) -> Path:
        return self.root(ctx) / "config.yaml"

    def install(self, ctx: Context, *, replace: bool | None = None) -> Result:
        res = Result(self.agent, "install")
        path = self.config_path(ctx)
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        current = provider_of(text)
        self.install_files(ctx, res)
        if current and current != PROVIDER and not replace:
            res.notes.append(f"Hermes' memory provider is {current!r}; only the remem-memory skill was installed. "
                             "Install again with replace to make remem the memory provider.")
            if replace is None:
                res.status = "needs_confirmation"
                res.notes.append(f"question: replace the memory provider {current!r} with remem?")
            return res
        root = self.root(ctx)
        for f in self.plugin:
            write_text(root / f.rel, f.content(ctx, self.agent), res)
        if current != PROVIDER:
            self.remember(ctx, "previous_provider", current)
            if not text:
                self.remember(ctx, "created", str(path))
            write_text(path, set_provider(text, PROVIDER), res)
        return res

    def remove(self, ctx: Context) -> Result:
        res = Result(self.agent, "remove")
        root = self.root(ctx)
        for f in self.plugin:
            remove_file(root / f.rel, res, prune_up_to=root)
        self.remove_files(ctx, res)
        path = self.config_path(ctx)
        m = load_manifest(ctx, self.agent)
        if path.exists() and provider_of(path.read_text(encoding="utf-8")) == PROVIDER:
            prev = (m.get("previous_provider") or [""])[0]
            new = set_provider(path.read_text(encoding="utf-8"), prev)
            if not new.strip() and str(path) in m.get("created", []):
                remove_file(path, res)
            else:
                write_text(path, new, res)
        save_manifest(ctx, self.agent, {})
        return res

    def status(self, ctx: Context) -> dict[str, Any]:
        out = super().status(ctx)
        root = self.root(ctx)
        out["files"].update({f.key: (root / f.rel).exists() for f in self.plugin})
        try:
            text = self.config_path(ctx).read_text(encoding="utf-8")
        except OSError:
            text = ""
        out["memory_provider"] = provider_of(text)
        out["installed"] = all(out["files"].values()) and out["memory_provider"] == PROVIDER
        out["partial"] = any(out["files"].values())
        return out


_TOP = re.compile(r"^(\S[^:#]*):")          # a top-level key line
_PROVIDER = re.compile(r"^(\s+)provider\s*:\s*(.*?)\s*(#.*)?$")


def provider_of(text: str) -> str:
    """``memory.provider`` from Hermes' config.yaml ("" when unset)."""
    import yaml

    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as e:
        raise InstallError(f"Hermes config.yaml is not valid YAML ({e}); left untouched") from None
    mem = (data or {}).get("memory") if isinstance(data, dict) else None
    value = mem.get("provider") if isinstance(mem, dict) else None
    return str(value) if value else ""


def set_provider(text: str, value: str) -> str:
    """Set (or, with ``value=""``, remove) ``memory.provider`` by editing only that line."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if re.match(r"^memory\s*:\s*(#.*)?$", ln)), None)
    if start is None:
        if not value:
            return text
        sep = "" if not text or text.endswith("\n") else "\n"
        new = text + sep + f"memory:\n  provider: {value}\n"
    else:
        end = next((j for j in range(start + 1, len(lines)) if _TOP.match(lines[j])), len(lines))
        idx = next((j for j in range(start + 1, end) if _PROVIDER.match(lines[j])), None)
        if idx is not None:
            if value:
                indent = _PROVIDER.match(lines[idx]).group(1)  # type: ignore[union-attr]
                lines[idx] = f"{indent}provider: {value}\n"
            else:
                del lines[idx]
                body = [ln for ln in lines[start + 1 : end - 1] if ln.strip()]
                if not body:
                    del lines[start]
        elif value:
            lines.insert(start + 1, f"  provider: {value}\n")
        new = "".join(lines)
    if provider_of(new) != value:
        raise InstallError("could not set memory.provider in Hermes config.yaml safely; left untouched")
    return new
