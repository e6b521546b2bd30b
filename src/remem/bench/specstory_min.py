"""A minimal SpecStory export reader for the learning benchmark (until the real `specstory` source lands).

It follows the derive-dev turn-numbering contract: sessions are ``*.md`` files ordered by byte-wise
file name; a file splits on ``\\n``; turn k is the k-th line starting with ``_**User``; the user
request runs to the first line starting with ``_**Assistant`` / ``_**Agent``. From the rest it reads
tool calls: shell commands (a ```bash block after a separator or a tool-use marker, with the plain
``` block after it as output), edits (```diff blocks, ``Edit file: PATH``) and reads (``Read file: PATH``).
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime

from ..layers.types import Action, Turn

USER = b"_**User"
AGENT = (b"_**Assistant", b"_**Agent")
_NAME_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})_(\d{2})-(\d{2})")
_HEAD_TIME = re.compile(r"\((\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2})Z\)")
_FILEISH = re.compile(r"[`*]{1,2}([\w./\\-]+\.[A-Za-z]{1,6})[`*]{1,2}")
_EDIT_FILE = re.compile(r"Edit file: ([^<\n]+?)\s*(?:</summary>)?$")
_READ_FILE = re.compile(r"Read file: ([^<\n]+?)\s*(?:</summary>)?$")
_SHELL_LANGS = ("bash", "sh", "shell", "powershell", "pwsh", "cmd", "zsh", "console")


def sessions(project_dir: str) -> list[str]:
    return sorted((f for f in os.listdir(project_dir) if f.endswith(".md")
                   and os.path.isfile(os.path.join(project_dir, f))), key=lambda s: s.encode("utf-8"))


def _start_ts(name: str) -> float | None:
    m = _NAME_TIME.match(name)
    if not m:
        return None
    y, mo, d, h, mi = map(int, m.groups())
    return datetime(y, mo, d, h, mi, tzinfo=UTC).timestamp()


def user_request(lines: list[str]) -> tuple[str, int]:
    body: list[str] = []
    i = 1
    for i in range(1, len(lines) + 1):
        if i == len(lines):
            break
        if lines[i].startswith(("_**Assistant", "_**Agent")):
            break
        body.append(lines[i])
    text = "\n".join(body).replace("\r", "").strip()
    if text.endswith("---"):
        text = text[:-3].rstrip()
    return text, i


def _prev_nonblank(lines: list[str], i: int) -> str:
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    return lines[j].strip() if j >= 0 else ""


def actions_of(lines: list[str]) -> list[Action]:
    """Tool calls in the assistant part of a turn."""
    out: list[Action] = []
    i = 0
    pending_edit = ""
    while i < len(lines):
        ln = lines[i].rstrip("\r")
        m = _EDIT_FILE.search(ln)
        if m:
            pending_edit = m.group(1).strip()
        m = _READ_FILE.search(ln)
        if m and not ln.startswith("```"):
            out.append(Action(tool="read", path=m.group(1).strip()))
        if ln.startswith("```"):
            lang = ln[3:].strip().lower()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            block = "\n".join(x.rstrip("\r") for x in lines[i + 1:j])
            end = j
            if lang in _SHELL_LANGS:
                before = _prev_nonblank(lines, i)
                if before == "---" or "run_terminal_cmd" in before or "Run command" in before \
                        or before.startswith("<details") or before.endswith("</summary>"):
                    k = j + 1
                    while k < len(lines) and not lines[k].strip():
                        k += 1
                    output = ""
                    if k < len(lines) and lines[k].rstrip("\r") == "```":
                        e = k + 1
                        while e < len(lines) and not lines[e].startswith("```"):
                            e += 1
                        output = "\n".join(x.rstrip("\r") for x in lines[k + 1:e])
                        end = e
                    out.append(Action(tool="shell", command=block.strip(), output=output))
            elif lang == "diff" or lang.startswith("diff"):
                path = pending_edit
                if not path:
                    for back in range(i - 1, max(-1, i - 8), -1):
                        fm = _FILEISH.search(lines[back])
                        if fm:
                            path = fm.group(1)
                            break
                out.append(Action(tool="edit", path=path))
                pending_edit = ""
            elif ":" in lang and "/" in lang or re.match(r"^[a-z]+:[\w./\\-]+\.\w+$", lang):
                out.append(Action(tool="edit", path=lang.split(":", 1)[1]))
            i = end + 1
            continue
        i += 1
    return out


def read_session(project: str, path: str) -> list[Turn]:
    name = os.path.basename(path)
    with open(path, "rb") as f:
        raw = f.read().split(b"\n")
    blocks: list[list[str]] = []
    for ln in raw:
        if ln.startswith(USER):
            blocks.append([ln.decode("utf-8", "replace")])
        elif blocks:
            blocks[-1].append(ln.decode("utf-8", "replace"))
    start = _start_ts(name)
    turns = []
    for k, lines in enumerate(blocks, 1):
        req, stop = user_request(lines)
        rest = lines[stop:]
        hm = _HEAD_TIME.search(lines[0])
        ts = datetime(*map(int, hm.groups()), tzinfo=UTC).timestamp() if hm else (  # type: ignore[misc,arg-type]
            start + k if start is not None else None)
        reply = "\n".join(x for x in rest if not x.startswith("```"))[:20000]
        turns.append(Turn(id=f"{name}#{k}", session=name, request=req, reply=reply, actions=actions_of(rest),
                          project=project, ts=ts, index=k))
    return turns


def read_project(project_dir: str, project: str | None = None) -> list[Turn]:
    project = project or os.path.basename(os.path.normpath(project_dir))
    out: list[Turn] = []
    for s in sessions(project_dir):
        out.extend(read_session(project, os.path.join(project_dir, s)))
    return out
