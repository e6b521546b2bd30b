"""Preferences, conventions, corrections and decisions from the user's own words (EN and ZH).

A sentence becomes a rule only when it has a rule's shape — a contrast ("use X, not Y", 用X而不是Y),
a prohibition or obligation tied to something concrete (a tool, a path, a `code` term, a word of
the project), a generaliser ("always", 以后) or a memory cue ("remember", 记住). Task requests
("please fix the tests") are not rules. Pure: one turn in, observations out.
"""

from __future__ import annotations

import hashlib
import re

from ..text.cjk import LETTERS as _CJK_LETTERS
from .clean import sentences, user_voice
from .types import Evidence, Observation, Turn
from .vocab import (
    GENERALISERS_ZH,
    MEMORY_CUES_EN,
    MEMORY_CUES_ZH,
    REPEAT_EN,
    REPEAT_TOLD_EN,
    REPEAT_ZH,
    STOP,
    TOOLS,
    slot_for,
    terms,
)

# a tool and at most one more word of it ("bun test", "npm run"), never a preposition or article that
# starts the rest of the sentence ("use uv instead of pip for installs": the rival is "pip")
_W = r"`?([A-Za-z][\w.@+/-]*(?: (?!(?:for|in|on|at|to|with|when|and|or|but|the|a|an|because|so|as|from|of|by|here|there|this|that|it|its|if|please|now|again|always|everywhere)\b)[a-z][\w.-]*)?)`?"
_CONTRAST_EN = [
    re.compile(r"\b(?:use|run|with|prefer|switch to|stick (?:to|with)|go with)\s+" + _W +
               r"\s*,?\s+(?:not|instead of|rather than|over|and not|never)\s+" + _W, re.I),
    re.compile(r"\b" + _W + r"\s+instead of\s+" + _W, re.I),
    re.compile(r"\b(?:don'?t|do not|never|stop)\s+(?:use|using|run|running)\s+" + _W +
               r"\s*[,;.]?\s*(?:use|run|instead use|but)\s+" + _W, re.I),
]
_CJK_CHAR = re.compile(f"[{_CJK_LETTERS}]")
_Z = r"([A-Za-z][\w.@+/-]*|[" + _CJK_LETTERS + r"]{1,8})"
_CONTRAST_ZH = [
    re.compile(r"(?:用|使用|改用|换成)\s*" + _Z + r"\s*(?:而不是|而非|代替|替代|，?不要用|，?别用)\s*" + _Z),
    re.compile(r"(?:不要|别|不用)(?:再)?(?:用|使用)\s*" + _Z + r"\s*[，,]?\s*(?:要|请|改)?(?:用|使用)\s*" + _Z),
]
_PROHIBIT_EN = re.compile(r"\b(don'?t|dont|do not|never|stop|avoid|no more|shouldn'?t|should not|must not|"
                          r"mustn'?t|you (?:can'?t|cannot))\b", re.I)
_OBLIGE_EN = re.compile(r"\b(always|must|make sure (?:to|you|that)|be sure to|should always|need to always|"
                        r"(?:all|every|each) [\w ]{1,30} (?:should|must|needs? to|ha(?:ve|s) to))\b", re.I)
_PROHIBIT_ZH = re.compile(r"(不要|别|不用|禁止|不能|不准|勿|不许|不应)")
_OBLIGE_ZH = re.compile(r"(必须|一定要|务必|应该|需要都|都要|都用|只能|要用|请用|请保持|保持|尽量|优先|都改成|都改为|都换成|"
                        r"请只|请始终|请一直|请确保|确保)")
# the user stating what they want or dislike, and plain imperatives of standing shape: candidates
# only (a restatement in another session, a generaliser, a cue or a correction makes them active)
_WANT_EN = re.compile(r"\bi (?:really )?(?:do not|don'?t|dont) (?:want|like|need)\b|\bi (?:would )?(?:prefer|like) \w|"
                      r"\bi (?:want|would like|'?d like) (?:all|every|each|them|it|the|our|my|you to (?:always|never|keep|use)|to (?:show|support|have|use|keep|display|be able))\b|"
                      r"\bi'?d rather\b|^(?:(?:ok|okay|so|also|and|please|now|lets|let'?s)[,:]?\s+)*(?:use|prefer|keep)\s|"
                      r"\b(?:lets|let'?s|please|you|we) (?:make sure|ensure)\b|^(?:make sure|ensure)\b|"
                      r"\b(?:should|shouldn'?t|has to|needs to) (?:be|have|use|only|not|never|always|stay|live|go|follow)\b",
                      re.I)
_WANT_ZH = re.compile(r"我(?:不)?(?:想要|希望|喜欢|倾向)|请(?:不要|别|保持|使用|用)|^(?:要|别|不要)")
_DISLIKE = re.compile(r"\bi (?:really )?(?:do not|don'?t|dont) (?:want|like|need)\b|shouldn'?t|我不(?:想|希望|喜欢)|"
                      r"^(?:别|不要)|请(?:不要|别)", re.I)
# an instruction that gives its reason ("use X so that the tests can run in parallel") is meant to last
_IMPERATIVE = re.compile(r"^(?:(?:ok|okay|so|also|and|please|now|lets|let'?s|then)[,:]?\s+)*(?:use|keep|put|prefer|"
                         r"make sure|ensure|always|never|don'?t|dont|do not|avoid)\b", re.I)
_WHY = re.compile(r"\b(?:so that|so (?:we|it|they|i|you) can|because|since)\b|(?:因为|以便|为了)", re.I)
_SHOULD = re.compile(r"\b(?:should|must|needs? to|has to|have to)\b|(?:必须|应该|一定要|务必)", re.I)
_BUG = re.compile(r"\b(?:it|this|that) (?:should|must)(?:n'?t)? (?:work|be working|have worked)|\b(?:but|still|though|yet)\b|"
                  r"\b(?:you|we) (?:should|must) (?:have|know)\b", re.I)
# a thing described as not doing what it should ("host controls dont show up", "the saved filters still
# dont persist", "it shouldnt take so long"): a bug report, not a prohibition; a rule's negation leads
# its sentence or follows a person ("dont show the summary", "we never run it in CI")
_MALFUNCTION = re.compile(
    r"^(?!(?:please|also|and|so|but|just|then|ok|okay|now|pls)\b)(?:(?!(?:i|you|we|u|please)\b)[\w'.-]+\s+){1,5}"
    r"(?:still\s+)?(?:dont|don'?t|doesn'?t|doesnt|do not|does not|didn'?t|didnt|did not|isn'?t|isnt|aren'?t|"
    r"won'?t|wont|can'?t|cant|never|still)\s+(?:(?:actually|really|even|properly|correctly)\s+)?"
    r"(?:show|work|load|appear|render|display|happen|update|change|respond|trigger|fire|save|reflect|"
    r"persist|connect|start|open|close|stick|register|skip|finish)\w*\b|"
    r"\b(?:it|this|that|they|these|those|which)\s+(?:shouldn'?t|shouldnt|should not)\s+"
    r"(?:take|happen|be (?:happening|failing|slow|so|this|that))\b", re.I)
MIN_LOOSE_TERMS = 4          # a rule with no concrete anchor needs this many content words
_CORRECTION_EN = re.compile(
    r"^(?:no[,.!]|nope|wrong|that'?s (?:not|wrong|incorrect)|not like that|not what i|this is not what|"
    r"i (?:did not|didn'?t|never) (?:ask|want|say)|why did you|you (?:still|again|didn'?t|did not|forgot)|"
    r"stop\b|don'?t do that|undo that|please undo|you should not|you shouldn'?t)", re.I)
_CORRECTION_ZH = re.compile(r"^(?:不对|不是|错了|你又|不要这样|我不是说|我说的是|不是删除|别这样|撤销)")
# the user reminding the agent of what it should have done: "you forgot to update the changelog",
# "you keep forgetting to run the linter", 你又忘了更新changelog. The thing forgotten is a standing
# rule only if one was stated: a reminder never makes a memory, it supports the rule it repeats
_REMINDER_EN = re.compile(r"\b(?:you|u)\s+(?:(?:again|still|also)\s+)?(?:forgot|keep forgetting|are forgetting)\s+"
                          r"(?:to\s+)?(?P<what>[^,;:!?]+)", re.I)
_REMINDER_ZH = re.compile(r"你(?:又|还是|总是)?(?:忘了|忘记了?)(?:要)?(?P<what>[^，。！？；,!?;]+)")
# the user complaining that the agent did more than asked: "i didnt ask for a deprecation warning",
# "why did you add info i didnt ask for", "i never asked for a dashboard page", 我没让你加这个. Said in
# two sessions, that is a standing rule of its own (agents widen the scope), in canonical words
_UNASKED_EN = re.compile(r"\bi (?:did not|didn'?t|didnt|never) ask(?:ed)? (?:you )?(?:for|to)\b|"
                         r"\bnot what i asked(?: for)?\b|\bstick to (?:the requested change|what i asked)", re.I)
_UNASKED_ZH = re.compile(r"我(?:没|没有|并没有|又没)(?:让|要求|叫)你")
UNASKED_RULE = ("Change only what was asked: no features, sections, output or removals the user did not ask for.",
                "只改要求的内容：不要加、也不要删用户没要求的功能、内容或输出。")
# the user asking for the documentation to follow the work: "lets make sure the documentation is up to
# date", "please update all documentation", 更新一下文档. Asked in two sessions, that is a standing
# expectation (the agent should do it unasked), in canonical words
_DOC = r"(?:documentation|docs?|readme|changelog|in-app help)"
_DOCS_EN = re.compile(r"\b(?:make sure|ensure|keep|check that)\b[^.!?]{0,60}\b" + _DOC + r"\b[^.!?]{0,40}\b"
                      r"(?:up to date|updated|accurate|current|in sync|in line)|"
                      r"^(?:(?:ok|okay|great|please|now|then|also|and|lets|let'?s|go ahead and)[,:]?\s+)*"
                      r"update (?:all |the |our )*(?:relevant |other |project )*" + _DOC + r"\b", re.I)
_DOCS_ZH = re.compile(r"(?:更新|同步)(?:一下)?(?:所有的?|相关的?)?(?:文档|README|说明文档|changelog)|文档(?:要)?保持(?:最新|同步)", re.I)
DOCS_RULE = ("Keep the documentation (README, docs, changelog) up to date with each change.",
             "每次改动后同步更新文档（README、docs、changelog）。")
_DECISION_EN = re.compile(
    r"\b(let'?s (?:go with|use|keep|stick with|do the|choose)|we(?:'ll| will) (?:go with|use)|"
    r"i(?:'ll| will)? go with|we decided|i(?:'ve)? decided|decided to|the decision is|go with option|"
    r"i (?:like|prefer|choose) (?:option|approach) ?\w*)\b", re.I)
_DECISION_ZH = re.compile(r"(我们用|就用|决定用|决定|采用|选择用|我倾向于|同意.{0,12}方案|使用方案|用方法|表名用|命名为|改名为)")
_REASON = re.compile(r"\b(because|since|so that|as it|as they|given that)\b|(因为|由于|所以|以便|为了)", re.I)
_CONVENTION = re.compile(
    r"\b(file|files|folder|directory|dir|code|tests?|commit|changelog|naming|name|constant|constants|"
    r"comments?|docs?|documentation|readme|format|formatting|style|lines?|module|modules|class|method|"
    r"function|namespace|import|types?|schema|branch|pr|log|logging)\b|(文件|目录|代码|注释|命名|测试|提交|格式|样式|模块|函数|文档)",
    re.I)
_CODE = re.compile(r"`([^`]{1,60})`")
_PATHISH = re.compile(r"(?:[\w-]+/)+[\w.-]+|\b[\w-]+\.(?:py|ts|tsx|js|jsx|cs|csproj|sln|md|mdc|json|ya?ml|toml|"
                      r"sh|ps1|go|rs|java|ipynb|sql|css|html)\b")
_IDENT = re.compile(r"\b(?:[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|\w+_\w+|[A-Z]{2,}\w*)\b")
_UPPER = re.compile(r"[A-Z]")
_ASCII_ALPHA = re.compile(r"[A-Za-z]")
MAX_RULE_CHARS = 300
MIN_RULE_TERMS = 3           # "always fix" is not a rule


# one token of a statement with the space before it: an ASCII word, path or identifier, or one other
# character (each CJK character is one)
_TOKEN = re.compile(r"\s*(?:[A-Za-z0-9_./\\:@+-]+(?:\(\))?|\S)")
_SPECIFIC = re.compile(r"[/\\._()@:]|\d|[a-z][A-Z]|^[A-Z]{2,}")
_NUMBER = re.compile(r"[\d.,:]+(?:ms|s|m|h|gb|mb|kb|%)?", re.I)
MIN_SHARED = 0.6             # a template keeps at least this share of the shorter statement's tokens


def _specific(tok: str) -> bool:
    """A token that names one thing (a path, file, identifier): what differs between two sayings of
    one standing request, never the request itself."""
    t = tok.strip().strip("`'\"")
    if not t or t.lower() in TOOLS or _NUMBER.fullmatch(t):
        return False            # another tool, or another value ("timeout 30" → "timeout 60"), is a change
    return bool(_SPECIFIC.search(t) or _PATHISH.fullmatch(t) or _IDENT.fullmatch(t))


def generalize(a: str, b: str) -> str | None:
    """One standing request said twice about different things ("能不能给 a.py 加上类型注解，顺便跑一下
    mypy", then about b.py): the words both share, each differing path, file or identifier as "…".
    None when they differ in anything else (another tool, another verb: then they are not one
    template, and the newer saying stands)."""
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    if not ta or not tb:
        return None
    import difflib

    sm = difflib.SequenceMatcher(a=[t.strip() for t in ta], b=[t.strip() for t in tb], autojunk=False)
    out: list[str] = []
    shared = 0
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            out.extend(ta[i1:i2])
            shared += i2 - i1
            continue
        gap = [t for t in ta[i1:i2] + tb[j1:j2] if t.strip() != "…"]
        if not all(_specific(t) for t in gap):
            return None
        if not out or out[-1].strip() != "…":
            lead = ta[i1] if i1 < i2 else tb[j1]
            out.append(" …" if lead[:1].isspace() else "…")
    if shared < MIN_SHARED * min(len(ta), len(tb)) or shared < 3 or shared == len(ta) == len(tb):
        return None
    return "".join(out).strip()


def _hash(*parts: str) -> str:
    return hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:12]


def anchors(sentence: str, vocab: frozenset[str] = frozenset(), tools: frozenset[str] = frozenset()) -> set[str]:
    """The concrete things a sentence is tied to: tools (the shared list and the project's own,
    ``tools``), `code`, paths, identifiers, project words."""
    low = sentence.lower()
    found = {m.lower() for m in _CODE.findall(sentence)}
    found |= {p.lower() for p in _PATHISH.findall(sentence)}
    found |= {w for w in (x.rstrip(".") for x in re.findall(r"[a-z][\w.+-]*", low)) if w in TOOLS or w in tools}
    found |= {i.lower() for i in _IDENT.findall(_CODE.sub(" ", sentence)) if len(i) > 2}
    if vocab:
        found |= {w for w in re.findall(r"[a-z][\w-]{3,}", low) if w in vocab}
    return found


def _evidence(turn: Turn, explicit: bool) -> Evidence:
    return Evidence(turn_id=turn.id, session=turn.session, ts=turn.ts, source="user", explicit=explicit)


def _canonical(turn: Turn, kind: str, key: str, text: str, said: str, explicit: bool, polarity: int = 1,
               **data: object) -> Observation:
    """A rule users say in many words (a complaint, a routine ask), kept in ``text``, one per project by
    its ``key``; ``said``: the user's sentence."""
    return Observation(kind=kind, key=key, text=text, project=turn.project, evidence=_evidence(turn, explicit),
                       polarity=polarity, terms=terms(text), data={"said": said[:MAX_RULE_CHARS], **data})


def _rule_kind(sentence: str) -> str:
    return "convention" if _CONVENTION.search(sentence) else "preference"


def _contrast(sentence: str, tools: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    known = TOOLS | tools
    for pat in _CONTRAST_EN:
        m = pat.search(sentence)
        if m:
            x, y = m.group(1).strip("`. "), m.group(2).strip("`. ")
            if pat is _CONTRAST_EN[2]:
                x, y = y, x
            x = x.split()[-1] if x.split()[0].lower() in ("with", "the", "a", "only") else x
            codes = [c.strip() for c in _CODE.findall(sentence)]
            if x.lower() not in known and len(codes) >= 2 and y in codes and codes[0] != y:
                x = codes[0]            # "`bun` is always used instead of `node`"
            if x.lower() in known or ("`" in m.group(0) and x.lower() not in STOP):
                return x, y
    for pat in _CONTRAST_ZH:
        m = pat.search(sentence)
        if m:
            x, y = m.group(1), m.group(2)
            if pat is _CONTRAST_ZH[1]:
                x, y = y, x
            if re.match(r"[A-Za-z]", x) or re.match(r"[A-Za-z]", y):
                return x, y
    return None


_GEN_POS_EN = re.compile(
    r"^(?:(?:please|and|also|so|but|yes|ok|okay|actually|again|remember)[,:]?\s+)*(?:always|never)\b|"
    r"\b(?:should|must|need to|have to|to|you|we|please) (?:just |really )?(?:always|never)\b|"
    r"\b(?:from now on|going forward|in the future|every time|each time|whenever|by default|as a rule|"
    r"in (?:this|the) (?:repo|repository|project|codebase)|across the board|everywhere|"
    r"throughout the (?:code|codebase|project|repo|solution|app)|in all (?:the |of the |our )?(?:code|files|places|"
    r"projects|tests|docs|documentation|repos)|(?:the|our) whole (?:solution|codebase|project|repo)|"
    r"i (?:always|never) (?:want|prefer|like|use))\b", re.I)
_NARRATION = re.compile(r"\b(?:i(?! (?:always|never) (?:want|prefer|like|use)\b)|it|this|that|he|she|they|isn'?t|wasn'?t|is|was|were) (?:always|never)\b|"
                        r"\b(?:is|are|was|were|it'?s|been) (?:everywhere|across the board)\b|"
                        r"\bnever (?:asked|said|wanted|told|knew|been|had|got|did|was)\b|"
                        r"\b(?:such that|so that|so|if|when) (?:you|it|we) (?:always|never)\b", re.I)
_USE = re.compile(r"^(?:please |pls )?(?:use|using|请使用|使用|用)\s*`?([A-Za-z][\w.@+/-]{1,40})`?\s*[.。!]?$", re.I)


# a library, tool or package chosen in a task ("write the tests using mstest", "can we replace the bespoke
# diffing with the libgit2sharp library?"): a named thing (a tool of the project or the shared list,
# a name shaped like one: CamelCase, dotted, with digits, or called a library) in a frame of choice
_NAME = r"`?([A-Za-z][\w.+#-]*[\w+#])`?"
_KIND_OF_THING = r"(?:\s+(library|package|crate|module|framework|sdk|nuget package|lib))?"
_ADOPT = [re.compile(r"\b(?:use|using|adopt|switch(?:ing)? to|migrate to|go with)\s+(?:the\s+)?" + _NAME + _KIND_OF_THING,
                     re.I),
          re.compile(r"\breplac(?:e|ing)\b[^.?!]{0,80}?\b(?:with|by)\s+(?:the\s+)?" + _NAME + _KIND_OF_THING, re.I)]
_ASKED = re.compile(r"^(?:(?:ok|okay|so|also|and|now|then)[,:]?\s+)*(?:can|could|should|shall) (?:we|you)\b|"
                    r"^(?:(?:ok|okay|so|also|and|now|then)[,:]?\s+)*(?:lets|let'?s|please)\b", re.I)
_NAME_SHAPE = re.compile(r"\d|[a-z][A-Z]|\w\.\w")
# "when using X", "im using X": a condition or the state of things, not a choice
_NOT_CHOSEN_BEFORE = re.compile(r"\b(?:when|while|if|by|before|after|i'?m|i am|we'?re|we are|was|were|been|is|are)\s+$",
                                re.I)
_PURPOSE = re.compile(r"^\s+for\s+((?:(?!(?:and|but|so|because|since|instead|rather|then)\b)[\w./-]+\s*){1,4})", re.I)
_NOT_A_NAME = frozenset("it this that them one same new our my your their all any each these those".split())


def adoption(s: str, tools: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """The named thing a sentence chooses to use, and what for ("use the CommandLineParser library for
    cli handling" → ("CommandLineParser", "cli handling")); None when it chooses nothing. A question
    counts only as a request ("can we …", "let's …"), never "why are you using npm?"; a hint inside
    parentheses ("(Use `node --trace-deprecation …` to show …)") is a program's output."""
    if s.startswith("(") or (("?" in s or "？" in s) and not _ASKED.search(s)):
        return None
    for pat in _ADOPT:
        for m in pat.finditer(s):
            name, thing = m.group(1).rstrip(".").strip("`"), m.group(2)
            if name.lower() in _NOT_A_NAME or name.lower() in STOP or s[m.end():].lstrip().startswith("-") \
                    or _NOT_CHOSEN_BEFORE.search(s[:m.start()]) or re.match(r"`[^`]*\s", s[m.start(1) - 1:]):
                continue        # a command in backticks ("`dotnet test --collect`") is run, not chosen
            if thing or _NAME_SHAPE.search(name) or name.lower() in TOOLS or name.lower() in tools:
                pm = _PURPOSE.match(s[m.end():])
                return name, (pm.group(1).strip(" .,;:") if pm else "")
    return None


def _adopted(turn: Turn, s: str, chosen: tuple[str, str], explicit: bool) -> Observation:
    """A choice named in a task ("write the tests using mstest") as a rule candidate "Use mstest.":
    its tool's slot when it has one, else ``use:<name>`` (the key of a bare "use X"), so the same
    choice in another session is the same memory."""
    name, purpose = chosen
    tool = name.lower()
    slot = slot_for(tool)
    return Observation(kind="preference", key=f"{slot}={tool}" if slot else f"use:{tool}",
                       text=f"Use {name} for {purpose}." if purpose else f"Use {name}.", project=turn.project,
                       evidence=_evidence(turn, explicit), slot=slot, value=tool if slot else "",
                       terms=frozenset({tool}) | terms(purpose), data={"said": s, "adopted": True})


def _general(s: str) -> bool:
    """A generaliser in the position of a standing instruction (not "it isn't always followed")."""
    if "?" in s or "？" in s:
        return False
    if GENERALISERS_ZH.search(s):
        return True
    return bool(_GEN_POS_EN.search(s)) and not _NARRATION.search(s)


_CLAUSE_END = re.compile(r"[,.;:!?，。；：！？()\[\]]|\b(?:and|but|because|so|since|when|if|as|then)\b", re.I)


def clause_terms(s: str, m: re.Match[str] | None = None) -> frozenset[str]:
    """The content words of a rule's own clause: from its prohibition or obligation ("dont",
    "never", "always", "make sure", 不要 …; ``m``, when the caller has searched for it already) to
    the clause's end. The same rule said in sentences that differ around it ("use tokens for code,
    dont waste them on yap" / "dont waste tokens on yap, we are doing minimal edits") shares its
    clause when the whole sentences share few words."""
    if m is None:
        m = _PROHIBIT_EN.search(s) or _OBLIGE_EN.search(s) or _PROHIBIT_ZH.search(s) or _OBLIGE_ZH.search(s)
    if not m:
        return frozenset()
    rest = s[m.end():]
    end = _CLAUSE_END.search(rest)
    return terms(rest[: end.start()] if end else rest)


def is_correction(voice: str) -> bool:
    head = voice.strip()[:80]
    return bool(_CORRECTION_EN.match(head) or _CORRECTION_ZH.match(head))


def rule_observations(turn: Turn, prev: Turn | None = None, vocab: frozenset[str] = frozenset(),
                      tools: frozenset[str] = frozenset()) -> list[Observation]:
    """Rules (preference / convention), corrections and decisions stated in one user turn. ``vocab``:
    the project's words (``learn.project_vocab``); ``tools``: its own programs and packages
    (``learn.project_tools``)."""
    voice = user_voice(turn.request)
    if not voice:
        return []
    out: list[Observation] = []
    correction = is_correction(voice)
    # "i told you", 我说过 anywhere in the message mark its rules as said before; a bare "again" only
    # its own sentence ("the tests fail again" is a report, "use bun again" a repeat)
    repeat_told = bool(REPEAT_TOLD_EN.search(voice) or REPEAT_ZH.search(voice))
    sents = sentences(voice)
    unasked = _UNASKED_EN.search(voice) or _UNASKED_ZH.search(voice)
    if unasked:
        said = next((x for x in sents if unasked.group(0) in x), unasked.group(0))
        out.append(_canonical(turn, "preference", "rule:unasked", UNASKED_RULE[unasked.re is _UNASKED_ZH], said,
                              repeat_told, polarity=-1))
    # (a reminder, "you forgot to update the changelog", supports the rule it repeats and makes none; said
    # with "always" / 每次, the sentence is a standing rule in its own words)
    docs = next(((x, m) for x in sents if (m := _DOCS_EN.search(x) or _DOCS_ZH.search(x))
                 and not (_REMINDER_EN.search(x) or _REMINDER_ZH.search(x)) and not _general(x)), None)
    for s in sents:
        repeat = repeat_told or bool(REPEAT_EN.search(s))
        if len(s) > MAX_RULE_CHARS:
            continue
        if len(s) > 20 and len(_UPPER.findall(s)) > 0.6 * max(1, len(_ASCII_ALPHA.findall(s))):
            continue                     # shouting, not a rule
        rm = _REMINDER_EN.search(s) or _REMINDER_ZH.search(s)
        if rm and "?" not in s and "？" not in s and len(t := terms(rm.group("what"))) >= 2:
            out.append(Observation(kind="convention", key="reminder:" + _hash(*sorted(t)), text=s,
                                   project=turn.project, evidence=_evidence(turn, False), terms=t,
                                   data={"reminder": True}))
        general = _general(s)
        cue = bool(MEMORY_CUES_EN.search(s) or MEMORY_CUES_ZH.search(s))
        pair = _contrast(s, tools)
        if pair:
            x, y = (w.split()[-1] if w.split()[0].lower() in ("with", "the", "a", "only") else w for w in pair)
            slot = slot_for(x, y)
            key = f"{slot}={x.lower()}" if slot else f"contrast:{x.lower()}>{y.lower()}"
            text = f"Use {x}, not {y}." if not _CJK_CHAR.search(s) else f"用{x}，不用{y}。"
            out.append(Observation(kind="preference", key=key, text=text, project=turn.project,
                                   evidence=_evidence(turn, general or cue or repeat or correction),
                                   slot=slot, value=x.lower(), terms=terms(f"{x} {y}"),
                                   data={"avoid": y.lower(), "said": s}))
            continue
        um = _USE.match(s)
        if um and um.group(1).lower() not in ("it", "this", "that", "them"):
            tool = um.group(1).lower()
            out.append(Observation(kind="preference", key=f"use:{tool}", text=f"Use {um.group(1)}.",
                                   project=turn.project, evidence=_evidence(turn, cue), terms=frozenset({tool}),
                                   data={"said": s}))
            continue
        chosen = adoption(s, tools)
        if "?" in s or "？" in s or _MALFUNCTION.search(s):
            if chosen:
                out.append(_adopted(turn, s, chosen, general or cue or repeat))
            continue
        before = len(out)
        want = _WANT_EN.search(s) or _WANT_ZH.search(s)
        pe, oe, pz, oz = (_PROHIBIT_EN.search(s), _OBLIGE_EN.search(s), _PROHIBIT_ZH.search(s),
                          _OBLIGE_ZH.search(s))
        prohibit = pe or pz or (want and _DISLIKE.search(s))
        oblige = oe or oz or want
        anc = anchors(s, tools=tools)     # tools, `code`, paths, identifiers
        strict = bool(pe or oe or pz or oz)
        if not anc and (general or cue or strict):
            # a project word is enough when the user generalises, prohibits or obliges ("you should
            # not be moving anything from the prototypes directory": the project's own folder)
            anc = anchors(s, vocab, tools)
        t = terms(s)
        n_terms = len(t)
        if (prohibit or oblige or cue) and n_terms >= MIN_RULE_TERMS and \
                (anc or general or cue or n_terms >= MIN_LOOSE_TERMS):
            explicit = general or cue or repeat or bool(_WHY.search(s) and _SHOULD.search(s) and not _BUG.search(s))
            kind = _rule_kind(s)
            if cue and not (prohibit or oblige) and re.search(r"\b(?:remember|keep in mind) that\b", s, re.I) \
                    and not re.search(r"\b(?:want|should|must|need|use|using|prefer)\b", s, re.I):
                kind = "fact"           # "remember that X runs during init": a stated fact
            out.append(Observation(kind=kind, key="rule:" + _hash(*sorted(t)), text=s, project=turn.project,
                                   evidence=_evidence(turn, explicit), polarity=-1 if prohibit else 1,
                                   terms=t, data={"anchors": sorted(anc), "correction": correction,
                                                  "stated": kind == "fact",
                                                  "clause": sorted(clause_terms(s, pe or oe or pz or oz))}))
            continue
        dm = _DECISION_EN.search(s) or _DECISION_ZH.search(s)
        if dm and (anc or _REASON.search(s)) and "?" not in s and "？" not in s:
            reason = ""
            rm = _REASON.search(s)
            if rm:
                reason = s[rm.start():].strip()
            out.append(Observation(kind="decision", key="decision:" + _hash(*sorted(t)), text=s,
                                   project=turn.project, evidence=_evidence(turn, bool(reason)),
                                   terms=t, data={"reason": reason, "anchors": sorted(anc)}))
        if chosen and len(out) == before:
            out.append(_adopted(turn, s, chosen, general or cue or repeat))
    if docs:
        out.append(_canonical(turn, "convention", "rule:docs-current", DOCS_RULE[docs[1].re is _DOCS_ZH], docs[0],
                              repeat_told, routine=True))
    if correction and prev is not None:
        did = [a.command or a.path for a in prev.actions if a.command or a.path][-3:]
        first = sents[:1]
        if first:
            t = terms(first[0])
            out.append(Observation(kind="correction", key="correction:" + _hash(turn.id), text=first[0],
                                   project=turn.project, evidence=_evidence(turn, False), terms=t,
                                   data={"agent_did": did, "corrects_turn": prev.id}))
    return out
