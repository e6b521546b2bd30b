"""Word lists the extractors share: tools and their slots, generalisers, memory cues (EN and ZH)."""

from __future__ import annotations

import re

from ..text.cjk import RUN

# slot → tools that can fill it. A contrast "use X, not Y" fills the slot both belong to.
SLOT_TOOLS: dict[str, tuple[str, ...]] = {
    "tool.js_runtime": ("bun", "node", "nodejs", "deno"),
    "pkg.manager": ("npm", "pnpm", "yarn", "bun", "pip", "uv", "poetry", "conda", "pipenv", "cargo",
                    "nuget", "dotnet", "go", "gem", "composer", "brew"),
    "tool.ts_runner": ("ts-node", "tsx", "bun", "node"),
    "tool.test_runner": ("jest", "vitest", "pytest", "mocha", "unittest", "xunit", "mstest", "nunit"),
    "tool.shell": ("powershell", "pwsh", "bash", "zsh", "cmd", "sh", "fish"),
    "tool.bundler": ("vite", "webpack", "esbuild", "rollup", "turbopack", "parcel"),
    "tool.linter": ("eslint", "ruff", "flake8", "pylint", "prettier", "black", "biome"),
    "tool.vcs": ("git", "svn", "hg"),
}
# Tools, runtimes and platforms any project may name. The frameworks, libraries and programs of one
# project (its UI toolkit, its hosted backend, a build script of its own) are not listed here: they
# are read from the project's own history (``learn.project_tools``: the programs its commands run and
# the packages it installs) and passed to the extractors with the project's turns.
TOOLS = frozenset(t for ts in SLOT_TOOLS.values() for t in ts) | frozenset((
    "npx", "docker", "kubectl", "make", "cmake", "gradle", "maven", "mvn", "tsc", "python", "python3",
    "java", "rustc", "gcc", "clang", "typescript", "github", "gh", "winget", "jupyter", "venv",
    "redis", "postgres", "sqlite",
))

GENERALISERS_EN = re.compile(
    r"\b(always|never|from now on|going forward|in (?:this|the) (?:repo|repository|project|codebase)|"
    r"every time|each time|whenever|by default|in general|as a rule|in the future|for all (?:future )?"
    r"(?:files|code|tests|changes)|all the time|any time|consistently|not again|anymore)\b", re.I)
GENERALISERS_ZH = re.compile(r"(以后|今后|每次|统一|不要再|别再|一律|始终|总是|永远|默认|一直|所有的|任何时候|从现在开始|往后)")
MEMORY_CUES_EN = re.compile(
    r"\b(remember (?:that|to)|keep in mind|make a note|note for (?:the )?future|"
    r"for future reference|make this a rule|add (?:this|that|it) (?:as|to) (?:a )?(?:cursor )?rules?|"
    r"create a (?:cursor )?rule|write a (?:cursor )?rule)\b", re.I)
MEMORY_CUES_ZH = re.compile(r"(记住|记得|请记下|牢记|别忘了|不要忘记|写进规则|加到规则|添加.{0,6}规则)")
# the user saying they said it before ("i told you", anywhere in a message) …
REPEAT_TOLD_EN = re.compile(r"\b(i told you|i said|i already (?:said|told)|like i asked|as i said|"
                            r"didn'?t we (?:fix|agree|decide)|how many times)\b", re.I)
# … or "again" (the rules extractor takes it for its own sentence only)
REPEAT_EN = re.compile(r"\bagain\b|" + REPEAT_TOLD_EN.pattern, re.I)
REPEAT_ZH = re.compile(r"(你又|又一次|我说过|我已经说过|不是说了|说了多少次|还是没)")

STOP = frozenset("""a an the this that these those it its is are was were be been being to of in on at for
with by from as and or but if then so do does did not no nor you your we our us i me my please just
can could would should will shall may might must have has had any all some such there here what
which who how when where why use using used make sure also only very really thing things way dont
don't do not never always it's that's let's lets ok okay yes want wants need needs like see think get go know try going dont doesnt isnt
why because then now also still really rly actually something anything everything""".split())
_TOKEN = re.compile(r"[A-Za-z][\w.+#/-]*[\w+#]|[A-Za-z]")
_CJK_RUN = RUN


def _stem(w: str) -> str:
    """Plural and -ing endings off, so that restatements in other words share their terms."""
    if len(w) > 5 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith(("ches", "shes", "sses", "xes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")) and w.isalpha():
        return w[:-1]
    return w


def terms(text: str) -> frozenset[str]:
    """Content words of a statement (lower-case Latin words, CJK bigrams) for matching restatements."""
    low = text.lower().replace("`", " ")
    out = {_stem(w.rstrip(".")) for w in _TOKEN.findall(low) if w not in STOP and len(w) > 1}
    for run in _CJK_RUN.findall(text):
        if len(run) == 1:
            out.add(run)
        out.update(run[i:i + 2] for i in range(len(run) - 1))
    return frozenset(w for w in out if w)


_PHRASE_WORD = re.compile(r"[a-z][a-z0-9]*(?:[/_.-][a-z0-9]+)*")


def phrase_keys(text: str) -> frozenset[str]:
    """Two-word phrases of a statement's content words, adjacent once stop words are left out
    ("template literals" → "template literal", "force an exit" → "force exit"), and compound words
    ("solid/dry", "ts-node"). A restatement in other words often keeps the phrase that names the rule.
    Chinese, without spaces to find words by, gives every three characters of a run ("接 口 说", spaced
    like a two-word phrase: it needs as many shared terms)."""
    out: set[str] = set()
    prev = ""
    for w in _PHRASE_WORD.findall(text.lower()):
        if w in STOP:
            continue
        if len(w) < 3:
            prev = ""
            continue
        w = _stem(w)
        if len(w) >= 5 and any(c in w for c in "/_-"):
            out.add(w)
        if prev:
            out.add(prev + " " + w)
        prev = w
    for run in _CJK_RUN.findall(text):
        out.update(" ".join(run[i:i + 3]) for i in range(len(run) - 2))   # "接 口 说": a phrase of three characters
    return frozenset(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def slot_for(x: str, y: str = "") -> str:
    """The slot a contrast between tools x and y fills ('' when x is no known tool)."""
    x, y = x.lower(), y.lower()
    both = [s for s, ts in SLOT_TOOLS.items() if x in ts and (not y or y in ts)]
    if both:
        return both[0]
    return next((s for s, ts in SLOT_TOOLS.items() if x in ts), "")
