"""Learning core (remem.layers): user-voice cleaning and the rule / correction / decision extractors."""

from __future__ import annotations

from remem.layers import Action, Turn
from remem.layers.clean import user_voice
from remem.layers.learn import learn
from remem.layers.rules import rule_observations

STACK = "\n".join(f"    at Object.<anonymous> (/home/dev/app/src/mod{i}.ts:{i * 7}:13)" for i in range(40))
BUILD_LOG = "\n".join(
    f"C:\\dev\\ktsu-dev\\Lib\\Lib.Test\\Tests{i}.cs({i},5): error CS0246: The type or namespace name "
    f"'Foo{i}' could not be found (are you missing a using directive?)" for i in range(60))
VITE = ("[plugin:vite:import-analysis] Failed to resolve import \"./components/Chart\" from \"src/App.tsx\". "
        "Does the file exist?\n" * 20)


def T(i: int, text: str, session: str = "s1", project: str = "p", actions: list[Action] | None = None,
      reply: str = "") -> Turn:
    return Turn(id=f"{session}#{i}", session=session, request=text, reply=reply, actions=actions or [],
                project=project, ts=1_700_000_000 + i * 60 + (hash(session) % 1000) * 86400 % 1, index=i)


def test_pasted_material_is_not_the_users_voice() -> None:
    msg = (f"the tests fail again:\n```\nError: never use this path\n{STACK}\n```\n{BUILD_LOG}\n"
           "> Do not edit the plan file itself.\n| col | never |\n/init\n")
    voice = user_voice(msg)
    assert "the tests fail again" in voice
    for junk in ("never use this path", "CS0246", "Object.<anonymous>", "Do not edit", "| col"):
        assert junk not in voice
    assert user_voice("Implement the plan as specified, it is attached. Do NOT edit the plan file itself.\n"
                      "To-do's from the plan have already been created. Do not create them again.") == ""


def test_a_pasted_code_comment_is_not_the_users_voice() -> None:
    pasted = ("// Helper method to test null argument exceptions, always pass a message\n"
              "\tprivate static void AssertNull<T>(Action action, string message = Msg)\n"
              "/* never call this from tests */\n"
              "why does the analyzer say 'T' is not used in the method?")
    assert user_voice(pasted) == "why does the analyzer say 'T' is not used in the method?"
    assert [o for o in rule_observations(T(1, pasted)) if o.kind != "correction"] == []
    # a markdown bullet is prose, and a path in a sentence is not a comment
    assert user_voice("* always run the tests before a commit\nkeep configs under //server/conf please") == \
        "* always run the tests before a commit\nkeep configs under //server/conf please"


def test_pasted_logs_make_no_rules() -> None:
    turns = [T(1, f"please fix this\n{BUILD_LOG}"), T(2, f"still failing\n```\n{STACK}\n```"),
             T(3, VITE), T(4, "For the code present, we get this error:\n```\nnever use var; always use let\n```"),
             T(5, "Implement the plan as specified. Do NOT edit the plan file itself. Never stop until done.")]
    for t in turns:
        assert [o for o in rule_observations(t) if o.kind != "correction"] == [], t.request[:40]


def test_a_contrast_keeps_the_tool_and_leaves_the_rest_of_the_sentence() -> None:
    from remem.layers.rules import _contrast

    assert _contrast("from now on use uv instead of pip for installs") == ("uv", "pip")
    assert _contrast("use bun instead of npm in this repo") == ("bun", "npm")
    assert _contrast("always use uv, not pip, in this repo") == ("uv", "pip")


def test_contrast_fills_a_slot_and_repeats_activate() -> None:
    a = T(1, "lets use bun instead of node. are you familiar with bun?", session="a")
    b = T(1, "never install anything unless i ask you to. use bun, not node.", session="b")
    mems = learn([a, b])
    rt = [m for m in mems if m.slot == "tool.js_runtime"]
    assert len(rt) == 1 and rt[0].value == "bun" and rt[0].status == "active"
    assert {e.turn_id for e in rt[0].evidence} == {"a#1", "b#1"}
    never = [m for m in mems if "install" in m.text]
    assert never and never[0].status == "active"          # "never" is an explicit generaliser


def test_one_off_task_instructions_stay_candidates() -> None:
    mems = learn([T(1, "dont add Divide methods, just silence that error with an `SuppressMessage` attribute")])
    assert all(m.status != "active" for m in mems if m.kind in ("preference", "convention"))


def test_narration_and_questions_are_not_generalisers() -> None:
    for text in ("improve the rule, it isnt always being followed and i'm not sure why",
                 "I never asked for a dashboard page in `src/app`",
                 "should we always run `bun test` before committing?",
                 "think about how to improve that rule such that you always follow it in `rules.mdc`"):
        obs = rule_observations(T(1, text))
        assert not any(o.evidence.explicit for o in obs), text


def test_chinese_rules_and_memory_cues() -> None:
    obs = rule_observations(T(1, "以后都用pnpm而不是npm。记住不要再改动 `src/legacy` 目录"))
    kinds = {(o.kind, o.slot, o.value) for o in obs}
    assert ("preference", "pkg.manager", "pnpm") in kinds
    assert any(o.polarity == -1 and o.evidence.explicit for o in obs if o.kind == "convention")
    # a Chinese question or a pasted Chinese log is not a rule
    assert rule_observations(T(2, "为什么不要用npm？")) == []
    assert rule_observations(T(3, "控制台打印:\n```\n错误: 不要使用 npm\n```")) == []


def test_repeated_short_directive_in_one_session_activates() -> None:
    turns = [T(i, f"请实现第{i}个功能。use context7") for i in range(1, 5)]
    mems = learn(turns)
    c7 = [m for m in mems if m.key == "use:context7"]
    assert c7 and c7[0].status == "active" and len(c7[0].evidence) == 4


def test_correction_records_what_the_agent_did() -> None:
    prev = T(1, "run the tests", actions=[Action(tool="shell", command="npm test", output="sh: npm: command not found")])
    cur = T(2, "no, use bun test, not npm test")
    obs = rule_observations(cur, prev)
    corr = [o for o in obs if o.kind == "correction"]
    assert corr and corr[0].data["agent_did"] == ["npm test"] and corr[0].data["corrects_turn"] == "s1#1"
    assert learn([prev, cur])  # a correction alone never becomes active
    assert all(m.status == "candidate" for m in learn([prev, cur]) if m.kind == "correction")


def test_decision_needs_a_reason_or_anchor() -> None:
    d = rule_observations(T(1, "let's go with `zustand` because redux is too heavy for this app"))
    assert d and d[0].kind == "decision" and d[0].data["reason"].startswith("because")
    assert rule_observations(T(2, "lets do the revised recommendation then")) == []


# issue 16 recall: stated preferences, plain imperatives, wider generalisers, long typed paragraphs

def _rules(text: str) -> list:
    return [o for o in rule_observations(T(1, text)) if o.kind in ("preference", "convention", "decision")]


def test_stated_wants_and_dislikes_are_rule_candidates() -> None:
    for text, pol in (("I dont like nested classes, every type gets its own source file", -1),
                      ("i do not want the installer to touch the global npm cache", -1),
                      ("I prefer small named records over anonymous tuples in the service layer", 1),
                      ("I want all the menus to show an icon in front of each entry", 1),
                      ("use an in-memory filesystem so the unit tests can run in parallel", 1),
                      ("lets make sure the console project only handles input and rendering", 1)):
        obs = _rules(text)
        assert obs and obs[0].polarity == pol, text
        assert not obs[0].evidence.explicit, text        # one statement: a candidate, not active
    # task requests, questions and feelings are not rules
    for text in ("I want to add a settings page today", "can you fix the failing login test",
                 "do you think we should use a mock filesystem?", "I dont know why the build hangs",
                 "I like it", "please implement this"):
        assert _rules(text) == [], text


def test_restated_want_in_another_session_activates() -> None:
    a = T(1, "use an in-memory filesystem so the unit tests can run in parallel", session="a")
    b = T(1, "use an in-memory filesystem for the unit tests so they can run in parallel", session="b")
    c = T(1, "I want to add a settings page today", session="c")
    mems = [m for m in learn([a, b, c]) if m.kind in ("preference", "convention")]
    fs = [m for m in mems if "filesystem" in m.text]
    assert len(fs) == 1 and fs[0].status == "active" and {e.session for e in fs[0].evidence} == {"a", "b"}
    assert not [m for m in mems if "settings" in m.text]


def test_wider_generalisers_in_instruction_position() -> None:
    for text in ("make sure the emoji are extracted into named constants, across the board",
                 "Core.Parser should be renamed Parser in all the code and documentation",
                 "I always want to run the sonar scan, not just on release builds"):
        assert any(o.evidence.explicit for o in _rules(text)), text
    for text in ("I always wondered how the parser handles this", "it is everywhere in the logs, weird",
                 "should the parser be renamed everywhere?"):
        assert not any(o.evidence.explicit for o in rule_observations(T(1, text))), text


def test_chinese_wants_and_requests() -> None:
    for text, pol in (("我不喜欢嵌套类，每个类型单独一个文件", -1), ("请保持接口的命名风格和现有模块一致", 1),
                      ("别在组件里直接调用数据库接口", -1), ("我希望所有的错误信息都写进日志文件", 1)):
        obs = _rules(text)
        assert obs and obs[0].polarity == pol, text
    for text in ("我想知道为什么构建失败？", "请帮我看看这个报错", "我喜欢"):
        assert _rules(text) == [], text


def test_long_typed_paragraph_is_the_users_voice_but_long_pastes_are_not() -> None:
    para = ("okay so before we start i want to be clear about how the lobby works for the players. " * 6 +
            "And going forward never put the room code in the page title")
    assert len(para) > 400 and "\n" not in para
    assert "never put the room code" in user_voice(para)
    assert any(o.evidence.explicit for o in rule_observations(T(1, para)))
    minified = "var a=1;" + ";".join(f"function f{i}(x){{return x*{i}}}" for i in range(80))
    logline = "WARN " + " ".join(f"/srv/app/node_modules/pkg{i}/dist/index.js:{i}:{i * 3}" for i in range(40))
    for junk in (minified, logline, "x" * 900):
        assert user_voice(junk) == ""


def test_obligation_with_its_reason_is_standing_but_a_bug_report_is_not() -> None:
    for text in ("the merge summary should be printed after the diff table, because a long table scrolls it away",
                 "each test needs to get its own fake filesystem so that the tests can run in parallel",
                 "配置文件必须放在仓库根目录，因为部署脚本只在那里查找"):
        assert any(o.evidence.explicit for o in _rules(text)), text
    for text in ("it should work because I restarted the server but the lobby is still blank",
                 "the parser should have been fixed since yesterday, it still crashes on empty input",
                 "should the summary go after the table because it scrolls away?",
                 "you should have known the cache was stale because the build printed a warning"):
        assert not any(o.evidence.explicit for o in rule_observations(T(1, text))), text


def test_polite_standing_requests_zh_and_just_always_en() -> None:
    for text in ("每次打开设置页面，请只加载最近的20条记录", "把所有接口的超时单位都改成毫秒，以后也一样",
                 "can we just always print the summary table at the end of a batch run"):
        assert any(o.evidence.explicit for o in _rules(text)), text
    assert not any(o.evidence.explicit for o in _rules("把这个函数的单位都改成毫秒"))   # one task: a candidate
    for text in ("请帮我看看这个页面为什么是空白的", "can we just check the logs first",
                 "it just always crashes when I open the settings page"):
        assert not any(o.evidence.explicit for o in rule_observations(T(1, text))), text


def test_ide_problem_lines_and_json_members_are_not_the_users_voice() -> None:
    pasted = ("Loop should be simplified by calling Where(item => item.Enabled))sonarqube(csharpsquid:S3267)\n"
              "Refactor this method to reduce its Cognitive Complexity from 21 to the 15 allowed. [+7 locations]\n"
              '\t"message": "Change this condition so that it does not always evaluate to \'True\'.",\n'
              '"severity": 4,\n'
              "we should always keep the loops simple in the service layer")
    voice = user_voice(pasted)
    assert voice == "we should always keep the loops simple in the service layer"
    twice = [T(1, pasted.split("\n")[0], session="a"), T(1, pasted.split("\n")[0], session="b")]
    assert not [m for m in learn(twice) if m.status == "active" and m.kind in ("preference", "convention")]


def test_a_console_menu_and_option_help_are_not_the_users_voice() -> None:
    pasted = ("the batch run never skips the identical groups, here is what it shows:\n"
              "📁 Processing pattern: *.yml\n"
              "⏭️ Skip this group\n"
              "🛑 Stop processing remaining patterns\n"
              "  -y, --yes            Never ask for confirmation.\n"
              "  --no-color           Do not colour the output.\n"
              "please always print the group count before the prompt")
    voice = user_voice(pasted)
    assert voice.splitlines() == ["the batch run never skips the identical groups, here is what it shows:",
                                  "please always print the group count before the prompt"]
    # the same paste in three turns of a session is not a rule said three times
    turns = [T(i, pasted.replace("please always print the group count before the prompt", "still wrong"))
             for i in (1, 2, 3)]
    assert not [m for m in learn(turns) if m.status == "active" and m.kind in ("preference", "convention")]
    assert user_voice("I like the 🚀 in the title, keep it") == "I like the 🚀 in the title, keep it"
    logs = ("lobby.js:212 ✅ Seat controller loaded\n"
            "Legend: 🔧 = tool 🔍 = check 🚀 = install\n"
            "   at Acme.Cli.Program.Main(String[] args) in C:\\dev\\acme\\Program.cs\n"
            "Acme.Core succeeded (3.1s) → Acme.Core\\bin\\Debug\\net9.0\\Acme.Core.dll\n"
            "Acme.Test test failed with 4 error(s) (1.2s)\n"
            "PS C:\\dev\\acme >\n"
            "the seat list should come from the server, check lobby.js:212")
    assert user_voice(logs) == "the seat list should come from the server, check lobby.js:212"


def test_a_thing_that_does_not_work_is_a_bug_report_not_a_prohibition() -> None:
    for text in ("the host controls dont show up on the second screen.",
                 "the saved filters still dont persist after a reload",
                 "i feel like this shouldnt take so long, the cache is warm"):
        assert [o for o in rule_observations(T(1, text)) if o.kind != "correction"] == [], text
    for text in ("dont show the merge summary when every group is identical",
                 "we never run the migrations from the app, only from the admin script",
                 "the tests should never touch the network, mock the client"):
        assert [o for o in rule_observations(T(1, text)) if o.kind != "correction"], text


def test_again_marks_its_own_sentence_as_said_before() -> None:
    told = _rules("i told you before. keep the changelog entries under the unreleased heading")
    assert told and all(o.evidence.explicit for o in told)
    again = _rules("use a fresh temp dir in every fixture again, the old one leaked")
    assert again and all(o.evidence.explicit for o in again)
    # a report that something happened again says nothing about the rule in the next sentence
    report = rule_observations(T(1, "the import crashed again on the big file. the parser has to be done "
                                     "before the viewer work, it is the blocker"))
    assert report and not any(o.evidence.explicit for o in report)


def test_a_projects_own_tools_come_from_its_history_not_a_shared_list() -> None:
    """A program the project runs or a package it installs anchors a rule (and fills a contrast) in
    that project only: the shared list holds what every project may name, not one project's stack."""
    from remem.layers.learn import project_tools
    from remem.layers.vocab import TOOLS

    for word in ("psbuild", "imgui", "spectre.console", "convex", "clerk"):
        assert word not in TOOLS
    sh = [Action(tool="shell", command="cd build && ./psbuild.ps1 -Release", status="ok"),
          Action(tool="shell", command="dotnet add package Spectre.Console --version 0.49.1", status="ok"),
          Action(tool="shell", command="npm install @clerk/nextjs@5 zod", status="ok"),
          Action(tool="shell", command="start . && type notes.txt", status="ok")]
    tools = project_tools([T(1, "set it up", actions=sh)])
    assert {"psbuild", "spectre.console", "clerk", "nextjs", "zod"} <= tools
    assert not {"start", "type", "cd"} & tools            # ordinary words are no program names
    rule = "Do not call psbuild directly."
    assert [o for o in rule_observations(T(2, rule)) if o.kind != "correction"] == []   # nothing concrete
    got = rule_observations(T(2, rule), tools=tools)
    assert [o.kind for o in got] == ["preference"] and "psbuild" in got[0].data["anchors"]
    # a contrast between the project's own tools
    pair = rule_observations(T(3, "use spectre.console instead of the raw console writes"), tools=tools)
    assert pair and pair[0].text.startswith("Use spectre.console")
    # and end to end: the project that runs it learns the rule; a project that never ran it does not
    turns = [T(1, "build it", actions=sh), T(2, rule, session="s2")]
    assert any(m.text == rule for m in learn(turns))
    assert not any(m.text == rule for m in learn([T(2, rule, session="s2", project="q")]))


def test_a_prohibition_tied_to_a_project_word_is_a_candidate() -> None:
    """"Tied to a project term": a folder or module name the project's own paths use is enough for a
    prohibition or an obligation, not only for a generalised statement."""
    rule = "please do not touch anything in the mockups folder."
    assert [o for o in rule_observations(T(1, rule)) if o.kind != "correction"] == []
    got = rule_observations(T(1, rule), vocab=frozenset({"mockups"}))
    assert [(o.kind, o.polarity) for o in got] == [("convention", -1)] and "mockups" in got[0].data["anchors"]
    # a plain task request with the same word is still no rule
    assert rule_observations(T(2, "move the mockups folder into docs"), vocab=frozenset({"mockups"})) == []


def test_one_request_said_about_different_files_is_learned_as_its_template() -> None:
    """The same standing request about another file in each session: the memory says what it asks,
    not the latest file (it once read "能不能给 encodings/cp875.py 加上类型注解…" for every file)."""
    said = [("a", "能不能给 src/billing/retry.py 加上类型注解，顺便跑一下 mypy"),
            ("b", "能不能给 src/billing/invoice.py 加上类型注解，顺便跑一下 mypy"),
            ("c", "能不能给 tests/test_gateway.py 加上类型注解，顺便跑一下 mypy"),
            ("a", "but never use global state in load_config() please"),
            ("b", "but never use global state in parse_args() please")]
    mems = learn([T(i, text, session=s) for i, (s, text) in enumerate(said)])
    texts = {m.text: m for m in mems if m.kind in ("preference", "convention")}
    assert "能不能给 … 加上类型注解，顺便跑一下 mypy" in texts, list(texts)
    assert len(texts["能不能给 … 加上类型注解，顺便跑一下 mypy"].evidence) == 3
    assert "but never use global state in … please" in texts, list(texts)
    assert not [t for t in texts if "retry.py" in t or "gateway" in t or "load_config" in t]


def test_statements_that_differ_in_more_than_a_file_are_not_one_template() -> None:
    from remem.layers.rules import generalize

    assert generalize("always use pnpm in the frontend folder", "always use yarn in the frontend folder") is None
    assert generalize("不要用全局变量", "不要用局部变量") is None               # another word, not another file
    assert generalize("use bun not npm", "use bun not npm") is None               # nothing to generalise
    assert generalize("set the request timeout to 30s in api/client.py",
                      "set the request timeout to 60s in api/client.py") is None  # a new value: the newer stands
    assert generalize("把日志级别改成 warning，a/b.py 里打印太多了", "把日志级别改成 warning，c.py 里打印太多了") == \
        "把日志级别改成 warning，… 里打印太多了"
    assert generalize("能不能给 … 加上类型注解", "能不能给 x/y.py 加上类型注解") == "能不能给 … 加上类型注解"  # a third saying


def test_a_user_writing_about_an_error_is_their_voice_and_a_cut_frame_is_not() -> None:
    said = ("InterruptedError when I call delete() with a relative path — see below\n\nTraceback (most recent call "
            "last):\n  File \"/home/dev/shop/src/abc.py\", line 94, in check\n    x = 1\n  File \"/home/dev")
    assert user_voice(said) == "InterruptedError when I call delete() with a relative path — see below"
    assert user_voice("KeyError: 'customer_id'\nNameError: name 'x' is not defined. Did you mean: 'y'?") == ""
    ws = [m for m in learn([T(1, said)]) if m.kind == "working_state"]
    assert ws and ws[0].text.startswith("Goal: InterruptedError when I call delete()")


def test_the_same_rule_clause_in_different_sentences_is_one_rule() -> None:
    """Sentences around the rule differ so much that their words are not one rule (Jaccard < 0.5), but
    the rule's own clause — from its "dont" to the clause's end — is the same: one memory, active from
    two sessions. Two words in common are not enough ("dont let me down" / "dont let it go")."""
    a = T(1, "use the tokens for code and dont waste tokens on yap commentary, get started right away", session="a")
    b = T(1, "I put my faith in you, worst case I will revert, dont waste tokens on yap commentary", session="b")
    mems = [m for m in learn([a, b]) if m.kind in ("preference", "convention")]
    yap = [m for m in mems if "yap" in m.text]
    assert len(yap) == 1 and yap[0].status == "active" and {e.session for e in yap[0].evidence} == {"a", "b"}

    c = T(1, "do not let me down this time, understand first why the websocket became unwired", session="c")
    d = T(1, "ok go ahead with the seat layout refactor and do not let me down.", session="d")
    mems = [m for m in learn([c, d]) if m.kind in ("preference", "convention")]
    assert len(mems) == 2 and all(m.status == "candidate" for m in mems)


def test_a_rule_clause_of_the_opposite_polarity_is_not_the_same_rule() -> None:
    """The same clause under "dont" and under "make sure" is two rules, not one rule and its contradiction."""
    a = T(1, "please keep it short and dont squash commits on merge for feature work", session="a")
    b = T(1, "the history got messy again so make sure you squash commits on merge today", session="b")
    mems = [m for m in learn([a, b]) if m.kind in ("preference", "convention")]
    assert len(mems) == 2 and not any(m.against for m in mems)
    assert {m.polarity for m in mems} == {1, -1}


def test_a_reminder_supports_the_rule_it_repeats_and_makes_none_of_its_own() -> None:
    """"you forgot to update the changelog" in a later session is the stated rule said again: its
    second session (the rule's text and words stay the stated ones). Said of nothing stated, or of a
    prohibition, it makes nothing; "I forgot" and questions are not reminders."""
    rule = T(3, "please keep the changelog updated after every feature", session="a")
    said = T(4, "you forgot to update the changelog.", session="b")           # (T's time follows i)
    zh_rule = T(5, "每次改完代码都要更新文档里的接口说明", session="c")
    zh_said = T(6, "你又忘了更新文档里的接口说明", session="d")
    mems = learn([rule, said, zh_rule, zh_said])
    log = [m for m in mems if "changelog" in m.text and m.kind in ("preference", "convention")
           and m.key != "rule:docs-current"]          # (the docs routine: its own test)
    assert len(log) == 1 and {e.session for e in log[0].evidence} == {"a", "b"}
    assert log[0].text == rule.request and log[0].status == "active"
    doc = [m for m in mems if "接口说明" in m.text and m.kind in ("preference", "convention")]
    assert len(doc) == 1 and {e.session for e in doc[0].evidence} == {"c", "d"} and doc[0].text == zh_rule.request
    for alone in (["you forgot to update the changelog."], ["did you forget to run the migrations?"],
                  ["I forgot to mention the deploy script changed", "我忘了告诉你部署脚本改了"]):
        turns = [T(i, x, session=f"x{i}") for i, x in enumerate(alone)]
        assert [m for m in learn(turns) if m.kind in ("preference", "convention")] == [], alone
    never = T(1, "never touch the generated migrations folder by hand", session="e")
    forgot = T(2, "you forgot to touch the generated migrations folder", session="f")
    kept = [m for m in learn([never, forgot]) if "migrations" in m.text and m.kind in ("preference", "convention")]
    assert all("f" not in {e.session for e in m.evidence} for m in kept)


def test_a_restatement_sharing_a_rare_phrase_is_the_same_rule() -> None:
    """Said in two sessions in sentences too different for their words (Jaccard < 0.5) or their clauses:
    the rare phrase they share ("template literals", with "graphviz") makes them one rule, active from
    two sessions. Each statement alone stays a candidate."""
    from remem.layers.vocab import jaccard, terms

    said = "also make sure to use template literals to generate the graphviz rather than many console.log calls"
    again = ("ok, now extract the graphviz logic from the deps command into its own util function, and make sure "
             "to use template literals instead of concatenation")
    assert jaccard(terms(said), terms(again)) < 0.5
    a, b = T(1, said, session="a"), T(1, again, session="b")
    noise = [T(i, f"add a --{w} flag to the deps command", session="c") for i, w in enumerate(("json", "depth"), 2)]
    rules = [m for m in learn([a, b, *noise]) if m.kind in ("preference", "convention")]
    lit = [m for m in rules if "template literals" in m.text]
    assert len(lit) == 1 and lit[0].status == "active" and {e.session for e in lit[0].evidence} == {"a", "b"}
    alone = [m for m in learn([a]) if "template literals" in m.text and m.kind != "working_state"]
    assert len(alone) == 1 and alone[0].status == "candidate"


def test_a_shared_phrase_merges_only_when_rare_and_across_sessions() -> None:
    """The project's everyday words ("tools list", in many requests) and two statements of one session
    are not restatements of one rule; neither are two statements sharing only an idiom's two words."""
    a = T(1, "make sure the tools list output is sorted by fiber before anything else", session="a")
    b = T(1, "the tools list command should only print fiber names, and debug logs with a verbose flag", session="b")
    daily = [T(i, f"run tools list again and check entry {i}", session="c") for i in range(2, 8)]
    rules = [m for m in learn([a, b, *daily]) if m.kind in ("preference", "convention")]
    assert len([m for m in rules if "tools list" in m.text]) == 2
    assert all(m.status == "candidate" for m in rules)
    rules = [m for m in learn([a, b]) if m.kind in ("preference", "convention")]
    assert len(rules) == 1 and rules[0].status == "active"          # rare, two sessions: one rule

    c = T(1, "make sure the tools list output is sorted by fiber before anything else", session="d")
    d = T(2, "the tools list command should only print fiber names, and debug logs with a verbose flag", session="d")
    rules = [m for m in learn([c, d]) if m.kind in ("preference", "convention")]
    assert len(rules) == 2 and all(m.status == "candidate" for m in rules)


def test_a_chinese_restatement_sharing_a_rare_phrase_is_the_same_rule() -> None:
    """Chinese has no spaces to find adjacent words by: a run's three-character phrases stand for them
    ("接口说明"), with the same ≥ 3 shared terms (CJK bigrams) as a two-word phrase."""
    from remem.layers.vocab import jaccard, terms

    said, again = "请保持接口说明和代码一致，文档要跟上实现", "这次重构完，也请保持接口说明跟最新代码同步"
    assert jaccard(terms(said), terms(again)) < 0.5
    rules = [m for m in learn([T(1, said, session="a"), T(1, again, session="b")]) if m.kind != "working_state"]
    assert len(rules) == 1 and rules[0].status == "active" and len(rules[0].sessions) == 2
    alone = [m for m in learn([T(1, said, session="a")]) if m.kind != "working_state"]
    assert len(alone) == 1 and alone[0].status == "candidate"


def test_phrase_keys() -> None:
    from remem.layers.vocab import phrase_keys

    assert "template literal" in phrase_keys("use template literals, not concatenation")
    assert "force exit" in phrase_keys("don't force an exit, that's a hack")            # the stop word is skipped
    assert "solid/dry" in phrase_keys("we dont need to mention the SOLID/DRY stuff in the readme")
    assert not any(" " in k for k in phrase_keys("do it now"))
    assert "接 口 说" in phrase_keys("更新文档里的接口说明")
    assert phrase_keys("") == frozenset()


def test_a_choice_named_in_a_task_supports_the_rule_but_keeps_its_words() -> None:
    from remem.layers.select import render_line

    said = T(1, "can we use xunit instead of the hand-rolled test runner?", session="a")
    task = T(1, "write integration tests for the importer using xunit and the existing test project", session="b")
    alone = [m for m in learn([said]) if m.kind == "preference"]
    assert [m.status for m in alone] == ["candidate"]
    rules = [m for m in learn([said, task]) if m.kind == "preference"]
    assert len(rules) == 1 and rules[0].status == "active"
    assert rules[0].text == "Use xunit, not hand-rolled." and rules[0].slot == "tool.test_runner"
    assert rules[0].sessions == {"a", "b"} and rules[0].data["chosen_only"] == 1
    # the packet says what the user said: once (the task only named the choice)
    assert "said once" in render_line(rules[0].to_dict(), now=0.0)


def test_a_library_chosen_in_two_sessions_is_learned() -> None:
    from remem.layers.rules import adoption

    a = T(1, "can we please use the CommandLineParser library for argument handling?", session="a")
    b = T(1, "ok, add the export verb using CommandLineParser too", session="b")
    one = [m for m in learn([a]) if m.kind == "preference"]
    assert [(m.text, m.status) for m in one] == [("Use CommandLineParser for argument handling.", "candidate")]
    both = [m for m in learn([a, b]) if m.kind == "preference"]
    assert [(m.text, m.status) for m in both] == [("Use CommandLineParser for argument handling.", "active")]
    # not a choice: a question about what the agent did, a program's hint, a plain word
    for text in ("why are you using npm here?", "(Use `node --trace-deprecation ...` to show where it was created)",
                 "use the same approach as before", "are you sure we want to be using parseArgs for that?",
                 "Pass a timeout when using System.Text.RegularExpressions to process untrusted input",
                 "im using `dotnet test --collect:coverage` and the report folder changes every run"):
        assert adoption(text) is None, text
    assert adoption("the viewer should render the notes using marked") is None     # a plain word
    assert adoption("the viewer should render the notes using the marked library") == ("marked", "")
    assert adoption("use `vitest` for the unit tests.") == ("vitest", "the unit tests")
    assert not [o for o in rule_observations(T(1, "[DEBUG] Using toolId yarn for the brew check"))]
    # a sentence that states a rule stays the rule (its own words), not "Use …"
    rule = _rules("never use moment.js in new code, use date-fns instead")
    assert rule and all(not o.data.get("adopted") for o in rule)


def test_i_want_to_show_or_support_a_behaviour_is_a_rule_candidate() -> None:
    standing = _rules("I think I want to display the full banner when returning to the main menu every time")
    assert standing and standing[0].evidence.explicit                  # "every time": active on its own
    wish = _rules("I want to support resuming an interrupted batch run from its last finished group")
    assert wish and not wish[0].evidence.explicit                      # a candidate until said again
    assert _rules("I want to add a settings page today") == []         # a task


def test_complaints_about_unasked_changes_in_two_sessions_are_one_standing_rule() -> None:
    """"i didnt ask for a deprecation warning" in one session and "why did you add info i didnt ask for"
    in another: the agent widened the scope twice. That is one rule, in canonical words, citing both
    turns; said once it waits as a candidate; in Chinese the same."""
    from remem.layers.rules import UNASKED_RULE

    a = T(1, "i didnt ask for a deprecation warning, i asked you to make a change", session="a")
    b = T(2, "why did you add info i didnt ask for", session="b")
    c = T(3, "no, i didnt ask you to remove the disabled state", session="c")
    one = [m for m in learn([a]) if m.key == "rule:unasked"]
    assert [(m.text, m.status, m.polarity) for m in one] == [(UNASKED_RULE[0], "candidate", -1)]
    mems = [m for m in learn([a, b, c]) if m.key == "rule:unasked"]
    assert len(mems) == 1 and mems[0].status == "active"
    assert [e.turn_id for e in mems[0].evidence] == ["a#1", "b#2", "c#3"]
    zh = [m for m in learn([T(1, "我没让你改数据库的结构", session="z1"), T(2, "我没有要求你加日志", session="z2")])
          if m.key == "rule:unasked"]
    assert [(m.text, m.status) for m in zh] == [(UNASKED_RULE[1], "active")]
    # asking for something, or the agent's own words pasted, are no complaint
    for text in ("i asked you to add a retry to the upload, did it work?", "can you ask for the token at startup?",
                 "> I didn't ask for permission because the tool ran in auto mode\n\nok thanks"):
        assert not [o for o in rule_observations(T(1, text)) if o.key == "rule:unasked"], text


def test_asking_for_the_docs_to_follow_the_work_in_two_sessions_is_a_standing_rule() -> None:
    """"lets make sure the documentation is up to date" in one session, "please update all documentation"
    in another: the agent should do it unasked. One convention in canonical words, a routine (it waits
    behind the project's own rules for the session start's few slots)."""
    from remem.layers.rules import DOCS_RULE

    a = T(1, "lets make sure the documentation is up to date", session="a")
    b = T(2, "great. please update all documentation and commit", session="b")
    one = [m for m in learn([a]) if m.key == "rule:docs-current"]
    assert [(m.text, m.status) for m in one] == [(DOCS_RULE[0], "candidate")]
    both = [m for m in learn([a, b]) if m.key == "rule:docs-current"]
    assert len(both) == 1 and both[0].status == "active" and both[0].kind == "convention"
    assert both[0].data["routine"] and [e.turn_id for e in both[0].evidence] == ["a#1", "b#2"]
    zh = [m for m in learn([T(1, "改好了，更新一下相关文档", session="z1"), T(2, "请同步更新README", session="z2")])
          if m.key == "rule:docs-current"]
    assert [(m.text, m.status) for m in zh] == [(DOCS_RULE[1], "active")]
    for text in ("the docs say the flag is deprecated, is that right?", "read the readme first",
                 "why did the update of the docs site fail?", "I updated the readme myself"):
        assert not [o for o in rule_observations(T(1, text)) if o.key == "rule:docs-current"], text


def test_a_routine_waits_behind_the_projects_own_rules_at_a_session_start() -> None:
    from remem.layers.select import pick

    def rule(i: int, text: str, n: int, **data: object) -> dict[str, object]:
        return {"id": f"r{i}", "kind": "convention", "status": "active", "text": text, "confidence": 0.9,
                "sessions": [str(s) for s in range(n)], "data": data}

    mems = [rule(1, "Keep the documentation up to date with each change.", 5, routine=True),
            rule(2, "One type per file.", 2), rule(3, "Never use tuples in public APIs.", 2),
            rule(4, "Keep the console app to input and display only.", 3)]
    got = [m["id"] for m in pick(mems, "", entry="session_start", now=1_800_000_000.0)]
    assert set(got) == {"r2", "r3", "r4"}             # the routine, said in more sessions, waits
