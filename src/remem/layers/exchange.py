"""Learned memories as a file a person edits: ``remem learned export`` and ``remem learned import``.

The Markdown form is meant to be pasted into CLAUDE.md, AGENTS.md or ``.cursor/rules``::

    <!-- remem learned export {"at": 1760000000.0, "kinds": [...], "owner": "default", "projects": ["web"], "v": 1} -->

    # web

    ## Conventions
    - Run bun test before every commit. <!-- remem:m_351edf34f6811448 -->

One ``# project`` heading per project, one ``## Kind`` heading per kind, one ``- text`` line per
memory ending in its id as an HTML comment (invisible when rendered, kept by editors). The JSON form
holds the same: ``{"remem": "learned-export", "v": 1, …, "memories": [{"id", "project", "kind",
"text", …}]}``. Paths are anonymised (``ingest.pii.anonymise_paths``) and secrets redacted.

Reading a file back (``parse``) and comparing it with the store (``plan``) are pure: the caller
(``layers.service.import_file``) applies the plan in one transaction. A line whose text changed is
an edit (which locks it), a line without an id a new memory of its section's kind, a memory the file
no longer has (active when exported, of an exported project and kind) is *missing* — archived only
when asked. Anything the file cannot mean (no header, an unknown heading or id, a memory moved to
another section, a duplicate id, an empty line of text) is an ``InputError`` naming the line, and
nothing is changed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..ingest.normalize import InputError
from ..ingest.pii import anonymise_paths
from ..ingest.redact import redact_text

EXPORT_KINDS = ("convention", "preference", "decision", "procedure", "fact")
HEADINGS = {"convention": "Conventions", "preference": "Preferences", "decision": "Decisions",
            "procedure": "Procedures", "fact": "Facts"}
_BY_HEADING = {h.lower(): k for k, h in HEADINGS.items()} | {k: k for k in HEADINGS}
NO_PROJECT = "(no project)"
FORMAT_VERSION = 1
MAX_TEXT = 2000

END = "<!-- remem learned export end -->"
FRONT_MATTER = ("---\ndescription: Conventions, preferences, decisions and facts remem learned from past "
                "sessions\nalwaysApply: true\n---\n")
_HEADER = re.compile(r"^<!--\s*remem learned export\s+(?P<meta>\{.*\})\s*-->\s*$")
_MARKER = re.compile(r"\s*<!--\s*remem:(?P<id>[^\s>]*)\s*-->\s*$")
_ID = re.compile(r"m_[0-9a-f]{16}")
_ITEM = re.compile(r"^[-*+]\s+(?P<body>.*)$")
_COMMENT = re.compile(r"^<!--.*-->\s*$")


@dataclass(slots=True)
class Header:
    owner: str
    projects: list[str]
    kinds: list[str]
    at: float


@dataclass(slots=True)
class Entry:
    line: int
    id: str | None
    project: str
    kind: str
    text: str


@dataclass(slots=True)
class Plan:
    edits: list[tuple[Entry, dict[str, Any]]] = field(default_factory=list)
    new: list[Entry] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)
    unchanged: int = 0


def shown(text: str, home: str | None = None) -> str:
    """A memory's text as the file shows it: one line, secrets redacted, paths anonymised, never
    closing an HTML comment."""
    one = " ".join(redact_text(text or "").split())
    return anonymise_paths(one, home=home).replace("<!--", "<!- -").replace("-->", "- ->")


def _meta(owner: str, projects: list[str], at: float, home: str | None) -> dict[str, Any]:
    return {"v": FORMAT_VERSION, "owner": owner, "projects": [anonymise_paths(p, home=home) for p in projects],
            "kinds": list(EXPORT_KINDS), "at": round(at, 3)}


def render_md(records: list[dict[str, Any]], owner: str, projects: list[str], at: float,
              home: str | None = None, *, front_matter: bool = False) -> str:
    """The Markdown file of these records (active memories of ``EXPORT_KINDS``); ``front_matter``
    for a Cursor rule (``.cursor/rules/*.mdc``: always applied)."""
    meta = json.dumps(_meta(owner, projects, at, home), ensure_ascii=False, sort_keys=True)
    out = [f"<!-- remem learned export {meta} -->",
           "<!-- Edit a line's text, add `- ` lines under a heading, delete lines; keep each `remem:` marker. "
           "Then: remem learned import FILE -->"]
    for project in projects:
        mine = [r for r in records if r["project"] == project]
        out += ["", f"# {anonymise_paths(project, home=home) or NO_PROJECT}"]
        for kind in EXPORT_KINDS:
            out += ["", f"## {HEADINGS[kind]}"]
            out += [f"- {shown(r['text'], home)} <!-- remem:{r['id']} -->" for r in mine if r["kind"] == kind]
    out += ["", END]
    return (FRONT_MATTER if front_matter else "") + "\n".join(out) + "\n"


def render_json(records: list[dict[str, Any]], owner: str, projects: list[str], at: float,
                home: str | None = None) -> str:
    doc = {"remem": "learned-export", **_meta(owner, projects, at, home),
           "memories": [{"id": r["id"], "project": anonymise_paths(r["project"], home=home), "kind": r["kind"],
                         "text": shown(r["text"], home), "status": r["status"],
                         "confidence": round(float(r["confidence"]), 3), "sessions": r["sessions"]}
                        for r in records]}
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


# -- reading ----------------------------------------------------------------------------------

def _header(meta: Any, where: str) -> Header:
    if not isinstance(meta, dict) or meta.get("v") != FORMAT_VERSION:
        raise InputError(f"{where}: not a version-{FORMAT_VERSION} remem learned export")
    owner, projects, kinds, at = meta.get("owner"), meta.get("projects"), meta.get("kinds"), meta.get("at")
    if (not isinstance(owner, str) or not owner or not isinstance(projects, list)
            or not all(isinstance(p, str) for p in projects) or not isinstance(kinds, list)
            or not all(k in EXPORT_KINDS for k in kinds) or not isinstance(at, (int, float))):
        raise InputError(f"{where}: the export header is damaged (owner, projects, kinds, at)")
    return Header(owner=owner, projects=list(projects), kinds=list(kinds), at=float(at))


def _entry(line: int, mid: Any, project: Any, kind: Any, text: Any, header: Header) -> Entry:
    if mid is not None and (not isinstance(mid, str) or not _ID.fullmatch(mid)):
        raise InputError(f"line {line}: {mid!r} is not a learned memory id (m_ and 16 hex digits)")
    if not isinstance(kind, str) or kind not in header.kinds:
        raise InputError(f"line {line}: kind {kind!r} is not one of {', '.join(header.kinds)}")
    if not isinstance(project, str) or project not in header.projects:
        raise InputError(f"line {line}: project {project!r} is not one this file was exported for")
    clean = " ".join(text.split()) if isinstance(text, str) else ""
    if not clean:
        raise InputError(f"line {line}: the text is empty (delete the whole line to drop a memory)")
    if len(clean) > MAX_TEXT:
        raise InputError(f"line {line}: the text is longer than {MAX_TEXT} characters")
    return Entry(line=line, id=mid, project=project, kind=kind, text=clean)


def parse_md(text: str) -> tuple[Header, list[Entry]]:
    """The memories between the export's header and its end marker; what is around them (a
    CLAUDE.md's own text, a Cursor rule's front matter) is not read."""
    lines = text.splitlines()
    first = next((i for i, s in enumerate(lines) if _HEADER.match(s.strip())), None)
    if first is None:
        raise InputError("not a remem learned export: no header line `<!-- remem learned export {…} -->` "
                         "(export one with remem learned export)")
    m = _HEADER.match(lines[first].strip())
    assert m is not None
    try:
        meta = json.loads(m["meta"])
    except ValueError:
        raise InputError(f"line {first + 1}: the export header is not valid JSON") from None
    header = _header(meta, f"line {first + 1}")
    end = next((i for i in range(first + 1, len(lines)) if lines[i].strip() == END), len(lines))
    lines = lines[:end]
    project: str | None = None
    kind: str | None = None
    raw: list[tuple[int, str, str, str]] = []          # line, project, kind, body (marker included)
    for n, s in enumerate(lines[first + 1:], start=first + 2):
        stripped = s.strip()
        if not stripped or _COMMENT.match(stripped) and not _MARKER.fullmatch(stripped):
            continue
        if stripped.startswith("## "):
            heading = stripped[3:].strip().lower()
            if heading not in _BY_HEADING:
                raise InputError(f"line {n}: unknown section {stripped[3:].strip()!r}: one of "
                                 f"{', '.join(HEADINGS[k] for k in header.kinds)}")
            kind = _BY_HEADING[heading]
            continue
        if stripped.startswith("# "):
            name = stripped[2:].strip()
            project = "" if name == NO_PROJECT else name
            if project not in header.projects:
                raise InputError(f"line {n}: project {name!r} is not one this file was exported for "
                                 f"({', '.join(p or NO_PROJECT for p in header.projects)})")
            kind = None
            continue
        item = _ITEM.match(stripped)
        if item and not s[:1].isspace():
            if project is None or kind is None:
                raise InputError(f"line {n}: a memory before its `# project` and `## Kind` headings")
            raw.append((n, project, kind, item["body"]))
            continue
        if s[:1].isspace() and raw:                    # a wrapped line continues the item above
            ln, p, k, body = raw[-1]
            raw[-1] = (ln, p, k, body + " " + stripped)
            continue
        raise InputError(f"line {n}: expected a `# project` or `## Kind` heading or a `- ` memory line, "
                         f"got {stripped[:60]!r}")
    out = []
    for n, p, k, body in raw:
        mk = _MARKER.search(body)
        mid = mk["id"] if mk else None
        out.append(_entry(n, mid, p, k, body[:mk.start()] if mk else body, header))
    return header, out


def parse_json(text: str) -> tuple[Header, list[Entry]]:
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise InputError(f"not a remem learned export: invalid JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("remem") != "learned-export":
        raise InputError('not a remem learned export: no "remem": "learned-export" member')
    header = _header(doc, "header")
    mems = doc.get("memories")
    if not isinstance(mems, list):
        raise InputError('the export has no "memories" list')
    out = []
    for i, m in enumerate(mems, start=1):
        if not isinstance(m, dict):
            raise InputError(f"memory {i}: not an object")
        out.append(_entry(i, m.get("id"), m.get("project"), m.get("kind"), m.get("text"), header))
    return header, out


def parse(text: str) -> tuple[Header, list[Entry]]:
    """A Markdown or JSON export (told apart by its first character)."""
    return parse_json(text) if text.lstrip()[:1] == "{" else parse_md(text)


# -- comparing with the store -----------------------------------------------------------------

def new_id(owner: str, project: str, kind: str, text: str) -> str:
    import hashlib

    return "m_" + hashlib.sha1(f"user\0{owner}\0{project}\0{kind}\0{text}".encode()).hexdigest()[:16]


def plan(header: Header, entries: list[Entry], stored: dict[str, dict[str, Any]], owner: str,
         home: str | None = None) -> Plan:
    """What importing ``entries`` would change. ``stored``: the owner's memories by id (any status,
    every project of the file); ``entries`` name projects as the file shows them (anonymised)."""
    out = Plan()
    seen: dict[str, int] = {}
    for e in entries:
        if e.id is None:
            continue
        if e.id in seen:
            raise InputError(f"line {e.line}: {e.id} appears twice (first on line {seen[e.id]})")
        seen[e.id] = e.line
        rec = stored.get(e.id)
        if rec is None or rec.get("decided") == "forgotten":
            raise InputError(f"line {e.line}: no learned memory {e.id} of owner {owner} "
                             f"(forgotten, or from another home); remove its marker to add it as new")
        if anonymise_paths(rec["project"], home=home) != e.project or rec["kind"] != e.kind:
            raise InputError(f"line {e.line}: {e.id} is a {rec['kind']} of {rec['project'] or NO_PROJECT}; "
                             f"moving it to another section is not supported (edit its text where it is)")
        if e.text == shown(rec["text"], home):
            out.unchanged += 1
        else:
            out.edits.append((e, rec))
    fresh: set[tuple[str, str, str]] = set()
    for e in entries:
        if e.id is not None:
            continue
        key = (e.project, e.kind, e.text)
        if key in fresh:
            continue
        fresh.add(key)
        out.new.append(e)
    for rec in stored.values():
        if (rec["id"] not in seen and rec["status"] == "active" and rec["kind"] in header.kinds
                and anonymise_paths(rec["project"], home=home) in header.projects
                and float(rec["created_at"] or 0) <= header.at and rec.get("decided") != "forgotten"):
            out.missing.append(rec)
    out.missing.sort(key=lambda r: (r["project"], r["kind"], r["id"]))
    return out
