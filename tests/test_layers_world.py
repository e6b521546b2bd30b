"""Learning core (remem.layers): error→fix procedures, the world model, working state, lifecycle."""

from __future__ import annotations

from remem.ingest.signatures import error_signatures
from remem.layers import Action, Turn
from remem.layers.learn import learn
from remem.layers.lifecycle import confidence, resolve
from remem.layers.procedures import procedure_observations
from remem.layers.types import Evidence, Memory
from remem.layers.world import working_state, world_observations

PASS = "bun test v1.2.9\n" + "\n".join(f"✓ Chain Display > case {i} [0.0{i}ms]" for i in range(200)) + \
    "\n\n 200 pass\n 0 fail\nRan 200 tests across 9 files. [412.00ms]"
FAIL_DOTNET = "\n".join(
    f"C:\\dev\\Lib\\Lib.Test\\Tests.cs({i},9): error CS0246: The type or namespace name 'ServiceCollection' "
    f"could not be found (are you missing a using directive or an assembly reference?)" for i in range(30)) + \
    "\nBuild FAILED.\n    30 Error(s)"
OK_DOTNET = "Restore complete (0.5s)\n  Lib succeeded (0.3s) → Lib\\bin\\Debug\\net9.0\\Lib.dll\nBuild succeeded in 2.1s"


def sh(cmd: str, out: str) -> Action:
    return Action(tool="shell", command=cmd, output=out)


def T(sess: str, i: int, actions: list[Action], request: str = "go on", day: int = 0, reply: str = "") -> Turn:
    return Turn(id=f"{sess}#{i}", session=sess, request=request, reply=reply, actions=actions, project="lib",
                ts=1_700_000_000 + day * 86400 + i * 60, index=i)


def test_widened_signatures() -> None:
    cases = {
        "error CS0246: The type or namespace name 'X' could not be found": "CS0246",
        "warning NU1604: Project dependency Foo does not contain an inclusive lower bound": "NU1604",
        "error MSB4018: The \"GenerateDepsFile\" task failed unexpectedly.": "MSB4018",
        "src/A.cs(3,1): warning IDE0055: Fix formatting": "IDE0055",
        "FAILED tests/test_api.py::test_login[zh] - AssertionError: 401": "FAILED tests/test_api.py::test_login",
        "  \u25cf Login form \u203a rejects an empty password": "\u25cf Login form",
        "./cmd/main.go:12:2: undefined: parseFlags": "undefined: parseFlags",
        "Main.java:5: error: cannot find symbol": "cannot find symbol",
        "[vite] Failed to resolve import \"./Chart\" from \"src/App.tsx\"": "Failed to resolve import",
    }
    for text, want in cases.items():
        assert any(want in s for s in error_signatures(text)), (text, error_signatures(text))
    # the existing shapes keep their order and form
    assert error_signatures("ModuleNotFoundError: No module named 'foo'")[0].startswith("ModuleNotFoundError")


def test_error_then_fix_is_a_procedure_with_trigger_action_avoid_verify() -> None:
    s = [T("a", 1, [sh("dotnet build", FAIL_DOTNET), Action(tool="edit", path="Lib.Test/Lib.Test.csproj"),
                    sh("dotnet build", FAIL_DOTNET)]),
         T("a", 2, [Action(tool="edit", path="Lib.Test/Usings.cs"), sh("cd Lib && dotnet build", OK_DOTNET)],
           reply="The problem is that the test project lacks the DI package because it was never referenced.")]
    obs = procedure_observations(s)
    assert len(obs) == 1
    p = obs[0].data
    assert p["trigger"]["signature"].startswith("CS0246") and p["verify"] == "cd Lib && dotnet build"
    assert p["avoid"] == ["dotnet build"] and "edit Lib.Test/Usings.cs" in p["action"]
    assert "because" in p["explanation"]


def test_no_procedure_without_a_pass_or_beyond_two_turns() -> None:
    fail = [T("a", 1, [sh("dotnet build", FAIL_DOTNET)])]
    assert procedure_observations(fail) == []
    late = fail + [T("a", i, []) for i in (2, 3, 4)] + [T("a", 5, [sh("dotnet build", OK_DOTNET)])]
    assert procedure_observations(late) == []


def test_world_model_needs_repeated_successful_runs() -> None:
    turns = [T("s1", 1, [sh("cd synthase && bun test", PASS), sh("npm test", "sh: npm: command not found")]),
             T("s2", 1, [sh("bun test tests/a.test.ts", PASS), Action(tool="edit", path="synthase/bun.lock")], day=1),
             T("s2", 2, [sh("npm test", "npm ERR! code ENOENT")], day=1)]
    mems = {m.slot: m for m in learn(turns) if m.kind == "fact"}
    assert mems["cmd.test"].value == "bun test" and mems["cmd.test"].status == "active"
    assert mems["pkg.manager"].value == "bun"
    one = {m.slot: m for m in learn(turns[:1]) if m.kind == "fact"}
    assert one["cmd.test"].status == "candidate"       # one session is not enough for an inferred fact


def test_a_build_fixed_until_it_passed_is_the_projects_build_in_one_session() -> None:
    """Failed twice, then passed: the work loop of fixing a build names the project's build command, even
    in a project's only session; one failure before the pass, or passes alone, stay a candidate."""
    fixed = [T("s1", 1, [sh("dotnet build", FAIL_DOTNET)]), T("s1", 2, [sh("dotnet build Lib.sln", FAIL_DOTNET)]),
             T("s1", 3, [sh("dotnet build", OK_DOTNET)])]
    facts = {m.slot: m for m in learn(fixed) if m.kind == "fact"}
    assert facts["cmd.build"].value == "dotnet build" and facts["cmd.build"].status == "active"
    once = {m.slot: m for m in learn(fixed[1:]) if m.kind == "fact"}
    assert once["cmd.build"].status == "candidate"
    passes = {m.slot: m for m in learn([T("s1", i, [sh("dotnet build", OK_DOTNET)]) for i in range(4)])
              if m.kind == "fact"}
    assert passes["cmd.build"].status == "candidate"


def test_two_of_the_repositorys_project_files_name_its_package_manager() -> None:
    read = [T("s1", 1, [Action(tool="read", path="C:\\dev\\Widgets\\Widgets.csproj")]),
            T("s1", 2, [Action(tool="read", path="C:\\dev\\Widgets\\Demo\\Demo.csproj")])]
    facts = {m.slot: m for m in learn(read) if m.kind == "fact"}
    assert facts["pkg.manager"].value == "dotnet" and facts["pkg.manager"].status == "active"
    one = {m.slot: m for m in learn(read[:1] + [T("s1", 2, [Action(tool="read", path="C:\\dev\\Widgets\\Widgets.csproj")])])
           if m.kind == "fact"}
    assert one["pkg.manager"].status == "candidate"       # the same file twice is one file
    rival = read + [T("s1", 3, [Action(tool="read", path="C:\\dev\\Widgets\\Widgets.sln"),
                                Action(tool="edit", path="web/package-lock.json")])]
    facts = {m.slot: m for m in learn(rival) if m.kind == "fact"}
    assert facts["pkg.manager"].value == "dotnet"
    assert facts["pkg.manager"].status == "candidate"     # another manager's lock file: not settled


def test_agent_naming_a_command_it_ran_in_another_session_counts_as_that_session() -> None:
    served = "> web@1.0.0 start\n> node server.js\n\nServer listening on http://localhost:3000\n"
    run = T("s1", 1, [sh("npm start", served)] + [sh("npm start", served) for _ in range(3)])
    later = T("s2", 1, [], request="the lobby page is blank after a refresh", day=3,
              reply="I changed the hydration order. Restart the server with `npm start` and reload the page.")
    facts = {m.slot: m for m in learn([run, later]) if m.kind == "fact"}
    assert facts["cmd.run"].value == "npm start" and facts["cmd.run"].status == "active"
    assert {e.session for e in facts["cmd.run"].evidence} == {"s1", "s2"}
    # a command the agent only talks about (never ran successfully) is no fact, and one session stays a candidate
    talk = T("s3", 1, [], request="how do I deploy", day=4, reply="Run `npm run deploy` and then `npm start`.")
    facts = {m.slot: m for m in learn([run, talk]) if m.kind == "fact"}
    assert "deploy" not in str([m.value for m in facts.values()])
    facts = {m.slot: m for m in learn([run, T("s4", 1, [], request="thanks", day=5, reply="Glad it works.")])
             if m.kind == "fact"}
    assert facts["cmd.run"].status == "candidate"


def test_user_statement_of_fact() -> None:
    t = Turn(id="z#1", session="z", project="web", request="本项目前端使用Next.js 15和Supabase，请生成目录结构规范。")
    facts = [o for o in world_observations([t]) if o.data.get("stated")]
    assert facts and "Next.js 15" in facts[0].text


def test_working_state_is_short_and_names_the_open_error() -> None:
    big = "x" * 5000
    s = [T("w", 1, [Action(tool="edit", path=f"src/mod{i}.ts") for i in range(30)],
           request="重构 `src/mod` 目录下的加载逻辑 " + big[:100]),
         T("w", 2, [sh("dotnet build", FAIL_DOTNET)], reply="Next steps: add the missing using directive")]
    ws = working_state(s)
    assert ws is not None and len(ws.text) <= 500
    assert "CS0246" in ws.text and "Next:" in ws.text and ws.data["expires_at"] > s[-1].ts



def test_a_session_that_continues_carries_the_goal_on_and_says_what_was_done() -> None:
    """A session opening with "continue" gets the previous session's goal, not "Goal: continue"; a
    greeting, a thanks and a pasted test name are no goal; the last reply's report of work is "Done"
    (not "You're right!" or a list's heading), and a bold "Next steps:" heading gives its list."""
    first = [T("a", 1, [], request="Hello! Migrate the billing job from cron to the task queue."),
             T("a", 2, [Action(tool="edit", path="jobs/billing.py")], request="ok",
               reply="You're absolutely right! Let me check the scheduler first.\n\n"
                     "I've moved the billing job onto the queue and removed the cron entry.\n\n"
                     "**Next steps:**\n1. Backfill the missed invoices\n2. Delete `cron.d/billing`")]
    later = [T("b", 1, [], request="continue working on this", day=1),
             T("b", 2, [], request="thanks", day=1, reply="Here is what changed:\n- a\n- b")]
    pasted = [T("c", 1, [], request="FileFinder_SpecialCharactersInFilename_FindsCorrectly\n"
                                    "why does this test fail on Windows only?", day=2)]
    ws = {m.evidence[0].session: m for m in learn(first + later + pasted) if m.kind == "working_state"}
    a, b, c = ws["a"].text, ws["b"].text, ws["c"].text
    assert a.startswith("Goal: Migrate the billing job from cron to the task queue.")
    assert "Done: I've moved the billing job onto the queue" in a and "right!" not in a
    assert "Next: Backfill the missed invoices; Delete `cron.d/billing`" in a
    assert b.startswith("Goal: Migrate the billing job") and "Done:" not in b        # carried on; no report of work
    assert c == "Goal: why does this test fail on Windows only?"
    assert working_state(later) is None                        # alone: no goal to carry on and nothing done
    # over budget, what was done goes first and the goal, next steps and open error stay
    long = [T("d", 1, [sh("dotnet build", FAIL_DOTNET)], request="fix the build " + "of the library " * 8,
              reply="I've added " + "the missing using directive and more " * 6 + ".\n\nNext steps: " + "x" * 150)]
    d = working_state(long)
    assert d is not None and len(d.text) <= 500 and "Open error: CS0246" in d.text and "Next:" in d.text


def _mem(mid: str, slot: str, value: str, sessions: list[str], ts: float, source: str = "inferred",
         locked: bool = False) -> Memory:
    ev = [Evidence(turn_id=f"{s}#1", session=s, ts=ts, source=source) for s in sessions]
    return Memory(id=mid, kind="fact", key=slot, text=value, slot=slot, value=value, evidence=ev, updated_at=ts,
                  locked=locked, layer="L3")


def test_newer_better_supported_value_supersedes_and_locked_never() -> None:
    old = _mem("m1", "cmd.test", "npm test", ["a", "b"], 1.0)
    new = _mem("m2", "cmd.test", "bun test", ["c", "d", "e"], 2.0)
    resolve([old, new])
    assert old.status == "superseded" and old.superseded_by == "m2" and new.status == "active"
    locked = _mem("m3", "cmd.test", "npm test", ["a", "b"], 1.0, locked=True)
    locked.status = "active"
    new2 = _mem("m4", "cmd.test", "bun test", ["c", "d", "e"], 2.0)
    resolve([locked, new2])
    assert locked.status == "active" and new2.status == "candidate" and new2.data["conflict_with"] == "m3"


def test_user_statement_beats_inference() -> None:
    inferred = _mem("m1", "pkg.manager", "npm", ["a", "b", "c", "d"], 2.0)
    said = _mem("m2", "pkg.manager", "pnpm", ["e"], 1.0, source="user")
    resolve([inferred, said])
    assert said.status == "active" and inferred.status in ("candidate", "superseded")


def test_confidence_is_a_beta_posterior_and_rebuild_is_deterministic() -> None:
    assert confidence(0, 0) == 0.5 and confidence(8, 0) > confidence(2, 0) > confidence(2, 2)
    turns = [T("s1", 1, [sh("bun test", PASS)], request="use bun, not node"),
             T("s2", 1, [sh("bun test", PASS)], request="always use bun, not node", day=2)]
    a = [m.to_dict() for m in learn(turns)]
    b = [m.to_dict() for m in learn(list(turns))]
    assert a == b and all(d["evidence"] for d in a)


def test_any_programs_test_build_or_run_verb_names_its_family() -> None:
    """No cloud CLI is listed by name: a program followed by a test / build / lint / run verb is that
    family ("mycli dev" is a run command), other arguments are not ("mycli notes.txt" is just mycli)."""
    from remem.layers.commands import category, family

    assert family("convex dev --once") == "convex dev" and category("convex dev") == "run"
    assert family("psbuild build -c Release") == "psbuild build" and category("psbuild build") == "build"
    assert family("mycli notes.txt") == "mycli" and family("mycli run") == "mycli"   # "run" alone: no verb
    assert family("dotnet test") == "dotnet test" and family("bun run build") == "bun run build"
