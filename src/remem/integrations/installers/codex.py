"""Codex CLI: ``hooks.json``, the hooks feature switch in ``config.toml``, an AGENTS.md note, the skill.

Config dir: ``$CODEX_HOME`` or ``~/.codex`` (FORMATS.md §2.4). Codex runs a new or changed user hook
only after the user trusted it (``[hooks.state."<file>:<event>:<group>:<handler>"] trusted_hash``,
granted in the TUI's ``/hooks`` browser). remem does not forge that review: it reports which of its
hooks are trusted and tells the user exactly what is left to do.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from .base import HookAgent, skill_file
from .common import Context, InstallError, Result, is_remem_command, load_manifest, read_json, write_text

_HEADER = re.compile(r"^\s*\[([^\]]+)\]\s*(?:#.*)?$")
_HOOKS_KEY = re.compile(r"^\s*(?:hooks|codex_hooks)\s*=")


class Codex(HookAgent):
    agent = "codex"
    label = "Codex CLI"
    dir_var = "CODEX_HOME"
    dir_default = ".codex"
    binaries = ("codex",)
    hooks_file = "hooks.json"
    timeout = 60          # seconds
    events = [
        ("SessionStart", "SessionStart", "startup|resume"),
        ("UserPromptSubmit", "UserPromptSubmit", None),
        ("PostToolUse", "PostToolUse", "*"),
        ("Stop", "Stop", None),
    ]
    owned = [skill_file()]
    note_file = "AGENTS.md"

    def config_path(self, ctx: Context) -> Path:
        return self.root(ctx) / "config.toml"

    def after_install(self, ctx: Context, res: Result) -> None:
        path = self.config_path(ctx)
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        new, how = enable_hooks_feature(text)
        if how:
            write_text(path, new, res)
            self.remember(ctx, "feature_switch", how)
            if not text:
                self.remember(ctx, "created", str(path))
        trust = self.trust(ctx)
        if trust["untrusted"]:
            res.notes.append(
                "Codex runs new hooks only after you trust them. Start `codex` in a terminal, type `/hooks`, "
                f"and trust remem's hooks ({', '.join(trust['untrusted'])}). Until then Codex silently skips "
                "them; headless runs can pass `codex exec --dangerously-bypass-hook-trust` instead.")

    def after_remove(self, ctx: Context, res: Result) -> None:
        how = load_manifest(ctx, self.agent).get("feature_switch") or []
        path = self.config_path(ctx)
        if not how or not path.exists():
            return
        new = disable_hooks_feature(path.read_text(encoding="utf-8"), drop_table="table" in how)
        if not new.strip() and str(path) in load_manifest(ctx, self.agent).get("created", []):
            path.unlink()
            res.removed.append(str(path))
        else:
            write_text(path, new, res)

    def trust(self, ctx: Context) -> dict[str, list[str]]:
        """Which of remem's hooks Codex has a trusted hash for (keyed by file:event:group:handler)."""
        hooks_path = self.hooks_path(ctx)
        try:
            cfg = read_json(hooks_path)
            toml = tomllib.loads(self.config_path(ctx).read_text(encoding="utf-8")) \
                if self.config_path(ctx).exists() else {}
        except (InstallError, tomllib.TOMLDecodeError, OSError):
            return {"trusted": [], "untrusted": [e for e, _, _ in self.events]}
        state = ((toml.get("hooks") or {}).get("state") or {}) if isinstance(toml.get("hooks"), dict) else {}
        trusted: list[str] = []
        untrusted: list[str] = []
        for event, groups in (cfg.get("hooks") or {}).items():
            for gi, g in enumerate(groups if isinstance(groups, list) else []):
                for hi, h in enumerate((g or {}).get("hooks") or [] if isinstance(g, dict) else []):
                    if isinstance(h, dict) and is_remem_command(h.get("command")):
                        key = f"{hooks_path}:{_snake(event)}:{gi}:{hi}"
                        entry = state.get(key) if isinstance(state, dict) else None
                        ok = isinstance(entry, dict) and bool(entry.get("trusted_hash"))
                        (trusted if ok else untrusted).append(event)
        return {"trusted": trusted, "untrusted": untrusted}

    def status(self, ctx: Context) -> dict[str, Any]:
        out = super().status(ctx)
        out["trust"] = self.trust(ctx)
        try:
            toml = tomllib.loads(self.config_path(ctx).read_text(encoding="utf-8"))
            feats: dict[str, Any] = toml["features"] if isinstance(toml.get("features"), dict) else {}
            out["hooks_feature"] = bool(feats.get("hooks", feats.get("codex_hooks", False)))
        except (OSError, tomllib.TOMLDecodeError):
            out["hooks_feature"] = False
        return out


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def enable_hooks_feature(text: str) -> tuple[str, str]:
    """``text`` with ``[features] hooks = true``; and how it was done ("" = already on)."""
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InstallError(f"config.toml is not valid TOML ({e}); left untouched") from None
    feats: dict[str, Any] = parsed["features"] if isinstance(parsed.get("features"), dict) else {}
    if feats.get("hooks") is True or (feats.get("codex_hooks") is True and "hooks" not in feats):
        return text, ""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if m and m.group(1).strip() == "features":
            j = i + 1
            while j < len(lines) and not _HEADER.match(lines[j]):
                if re.match(r"^\s*hooks\s*=", lines[j]):
                    lines[j] = "hooks = true\n"
                    return "".join(lines), "key"
                j += 1
            lines.insert(i + 1, "hooks = true\n")
            return "".join(lines), "key"
    sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
    return text + sep + "[features]\nhooks = true\n", "table"


def disable_hooks_feature(text: str, *, drop_table: bool) -> str:
    """Undo :func:`enable_hooks_feature`: remove the ``hooks = true`` line (and an emptied table)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if not (m and m.group(1).strip() == "features"):
            continue
        j = i + 1
        while j < len(lines) and not _HEADER.match(lines[j]):
            if re.match(r"^\s*hooks\s*=\s*true\s*(?:#.*)?$", lines[j]):
                del lines[j]
                continue
            j += 1
        body = [ln for ln in lines[i + 1 : j] if ln.strip()]
        if drop_table and not body:
            del lines[i:j]
            while lines and not lines[-1].strip():
                lines.pop()
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
        break
    return "".join(lines)
