"""Stored turns as the pure learning core sees them (``layers.types.Turn`` / ``Action``): tool calls
reduced to tool, command, path and a bounded output; the learn job and the learn bench convert alike."""

from __future__ import annotations

import json
import re
from typing import Any

from .types import Action, Turn

OUTPUT_KEEP = 1500            # characters of each tool output the extractors see (head and tail)
_SHELL = frozenset(("bash", "shell", "exec_command", "local_shell", "run_shell_command", "run_terminal_cmd",
                    "run_terminal_command",
                    "terminal", "powershell", "execute_command", "shell_command"))
_EDIT = frozenset(("edit", "write", "multiedit", "apply_patch", "replace", "write_file", "edit_file",
                   "str_replace_based_edit_tool", "create_file", "notebookedit", "search_replace"))
_READ = frozenset(("read", "read_file", "view", "open_file", "cat"))


def _short(text: str) -> str:
    if len(text) <= OUTPUT_KEEP:
        return text
    half = OUTPUT_KEEP // 2
    return text[:half] + "\n…\n" + text[-half:]


# exports that describe a tool call in words instead of JSON (SpecStory: "Run command: bun test",
# "Edit file: src/app.ts", a bare "README.md"): the command or path is the text after the label
_VERSIONED = re.compile(r"_v\d+$")
_RUN_COMMAND = re.compile(r"^(?:Tool use: \*\*[^*]+\*\*\s*•\s*)?(?:Run command|Ran command|Command|Terminal):\s*", re.I)
_FILE_LABEL = re.compile(r"^(?:Edit(?:ed)? file|Read file|Write file|Create file|File):\s*", re.I)
_FENCED = re.compile(r"\s*```(?:bash|sh|shell|zsh|console|powershell|pwsh|cmd)?[ \t]*\n(.*?)\n```", re.S | re.I)
_PATH_TEXT = re.compile(r"^[\w@.~/\\-][\w@.~/\\ -]{0,300}$")


def _path_of(raw: str) -> str:
    """The file a described edit or read names (its first line, after a label), or ''."""
    line = _FILE_LABEL.sub("", (raw.strip().splitlines() or [""])[0].strip(), count=1).strip("`*\" ")
    return line if _PATH_TEXT.match(line) and ("." in line or "/" in line) else ""


def to_action(call: dict[str, Any]) -> Action:
    """One stored tool call (name, input, output, is_error) as a core ``Action``."""
    name = str(call.get("name") or "")
    raw = str(call.get("input") or "")
    args: Any = None
    if raw[:1] in "{[":
        try:
            args = json.loads(raw)
        except ValueError:
            args = None
    command, path = "", ""
    if isinstance(args, dict):
        cmd = args.get("command", args.get("cmd", ""))
        if isinstance(cmd, list):   # codex: ["bash", "-lc", "npm test"]
            cmd = cmd[-1] if cmd else ""
        command = str(cmd or "")
        path = str(args.get("file_path") or args.get("path") or args.get("notebook_path")
                   or args.get("target_file") or "")
    low = _VERSIONED.sub("", name.lower())     # Cursor's "read_file_v2", "run_terminal_command_v2"
    tool = ("shell" if low in _SHELL or (command and low not in _EDIT | _READ) else
            "edit" if low in _EDIT else "read" if low in _READ else low)
    if tool == "shell" and not command:
        command = _RUN_COMMAND.sub("", raw.strip(), count=1).split("\n", 1)[0].strip()
        fence = None if command else _FENCED.match(str(call.get("output") or ""))
        command = fence.group(1).strip() if fence else command
    if tool in ("edit", "read") and not path and args is None:
        path = _path_of(raw)
    status = "failed" if call.get("is_error") else ""
    return Action(tool=tool, command=command, path=path, output=_short(str(call.get("output") or "")),
                  status=status)


def to_turns(rows: list[dict[str, Any]]) -> list[Turn]:
    out: list[Turn] = []
    index: dict[str, int] = {}
    for r in rows:
        try:
            calls = json.loads(r.get("actions_json") or "[]")
        except ValueError:
            calls = []
        sess = r.get("session_id") or f"turn:{r['id']}"
        index[sess] = index.get(sess, 0) + 1
        out.append(Turn(id=r["id"], session=sess, request=r.get("request") or "", reply=r.get("reply") or "",
                        actions=[to_action(c) for c in calls if isinstance(c, dict) and c.get("name") != "note"],
                        project=r.get("project") or "", ts=r.get("started_at") or r.get("ended_at")
                        or r.get("created_at"), index=index[sess]))
    return out


