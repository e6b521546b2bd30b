"""Turn assembly (remem.sources.turns): tables of plain messages in, turns out."""

from __future__ import annotations

from remem.model import Message, ToolCall
from remem.sources.turns import assemble_turns, shorten

S = "sess-1"


def user(sid: str, text: str, ts: float, *, real: bool = True, session: str = S, **kw) -> Message:
    return Message(source_id=sid, session_id=session, role="user", text=text, ts=ts, real_user=real, **kw)


def asst(sid: str, text: str, ts: float, *, calls: list[ToolCall] | None = None, session: str = S,
         **kw) -> Message:
    return Message(source_id=sid, session_id=session, role="assistant", text=text, ts=ts,
                   tool_calls=calls or [], **kw)


def result(sid: str, call_id: str, out: str, ts: float, *, error: bool = False, session: str = S,
           **kw) -> Message:
    return Message(source_id=sid, session_id=session, role="tool", ts=ts,
                   tool_results={call_id: (out, error)}, **kw)


def status(sid: str, value: str, ts: float) -> Message:
    return Message(source_id=sid, session_id=S, role="system", ts=ts, status=value)


def test_one_complete_turn_carries_everything():
    msgs = [
        user("u1", "  fix the flaky test  ", 10.0, cwd="/p/app"),
        asst("a1", "", 11.0, calls=[ToolCall(name="Read", input='{"f": 1}', call_id="c1")], model="m-1"),
        result("r1", "c1", "file body", 12.0),
        asst("a2", "Done: use a fake clock.", 13.0, model="m-2"),
    ]
    res = assemble_turns(msgs, agent="claude-code", owner="claude-code:work")
    assert (res.messages, res.incomplete, res.skipped_empty) == (4, 0, 0)
    [t] = res.turns
    assert t.request == "fix the flaky test"
    assert t.reply == "Done: use a fake clock."
    assert [(a.name, a.input, a.output, a.is_error, a.call_id) for a in t.actions] == [
        ("Read", '{"f": 1}', "file body", False, "c1")]
    assert t.source_key == "claude-code:sess-1:u1"
    assert (t.agent, t.owner, t.session_id, t.project) == ("claude-code", "claude-code:work", S, "/p/app")
    assert (t.started_at, t.ended_at) == (10.0, 13.0)
    assert t.model == "m-2"
    assert t.status == "succeeded"
    assert t.message_ids == ["u1", "a1", "r1", "a2"]


def test_trailing_user_message_without_reply_is_incomplete_not_emitted():
    msgs = [user("u1", "q1", 1), asst("a1", "r1", 2), user("u2", "q2", 3)]
    res = assemble_turns(msgs, agent="x")
    assert [t.request for t in res.turns] == ["q1"]
    assert res.incomplete == 1


def test_trailing_turn_still_running_after_its_text_waits_for_next_sync():
    running = [user("u1", "q", 1), asst("a1", "Let me look.", 2, calls=[ToolCall(name="Bash", call_id="c")])]
    res = assemble_turns(running, agent="x")
    assert res.turns == [] and res.incomplete == 1
    # the same turn, complete later: same source_key
    done = [*running, result("r", "c", "ok", 3), asst("a2", "All good.", 4)]
    [t] = assemble_turns(done, agent="x").turns
    assert t.source_key == "x:sess-1:u1" and t.reply == "All good."


def test_earlier_turn_with_activity_after_its_last_text_is_still_emitted():
    msgs = [user("u1", "q1", 1), asst("a1", "Trying.", 2, calls=[ToolCall(name="Edit", call_id="c")]),
            result("r", "c", "boom", 3, error=True), user("u2", "q2", 4), asst("a2", "ok", 5)]
    res = assemble_turns(msgs, agent="x")
    assert [(t.request, t.reply, t.status) for t in res.turns] == [("q1", "Trying.", "failed"), ("q2", "ok", "succeeded")]


def test_turn_without_a_reply_is_complete_once_the_next_request_follows():
    # its reply never came or its line was cut: the next request closes it (issue 13 item 20)
    msgs = [user("u1", "q1", 1), asst("a1", "", 2, calls=[ToolCall(name="Edit", call_id="c")]),
            user("u2", "q2", 3), asst("a2", "answer", 4)]
    res = assemble_turns(msgs, agent="x")
    assert [(t.request, t.reply) for t in res.turns] == [("q1", ""), ("q2", "answer")]
    assert [a.name for a in res.turns[0].actions] == ["Edit"]
    assert res.incomplete == 0


def test_last_turn_without_any_assistant_text_is_incomplete():
    msgs = [user("u1", "q1", 1), asst("a1", "answer", 2),
            user("u2", "q2", 3), asst("a2", "", 4, calls=[ToolCall(name="Edit", call_id="c")])]
    res = assemble_turns(msgs, agent="x")
    assert [t.request for t in res.turns] == ["q1"]
    assert res.incomplete == 1


def test_reply_is_last_text_and_earlier_texts_become_notes_in_order():
    msgs = [user("u1", "q", 1), asst("a1", "First I read.", 2, calls=[ToolCall(name="Read", call_id="c")]),
            result("r", "c", "x", 3), asst("a2", "Then the answer.", 4)]
    [t] = assemble_turns(msgs, agent="x").turns
    assert t.reply == "Then the answer."
    assert [(a.name, a.output) for a in t.actions] == [("note", "First I read."), ("Read", "x")]
    [t2] = assemble_turns(msgs, agent="x", notes=False).turns
    assert [a.name for a in t2.actions] == ["Read"]


def test_tool_output_is_shortened_per_call_head_and_tail():
    big1 = "A" * 3000 + "MIDDLE" + "Z" * 3000
    big2 = "b" * 500
    msgs = [user("u", "q", 1),
            asst("a", "", 2, calls=[ToolCall(name="t1", call_id="c1"), ToolCall(name="t2", call_id="c2")]),
            result("r1", "c1", big1, 3), result("r2", "c2", big2, 4), asst("a2", "done", 5)]
    [t] = assemble_turns(msgs, agent="x", max_tool_output=300).turns
    out1, out2 = t.actions[0].output, t.actions[1].output
    assert out1.startswith("A" * 200) and out1.endswith("Z" * 100)
    assert "MIDDLE" not in out1 and "chars omitted" in out1
    assert len(out1) < 360
    assert out2 == "b" * 300 or ("chars omitted" in out2 and len(out2) < 360)   # each call on its own budget


def test_shorten_table():
    assert shorten("abc", 10) == "abc"
    assert shorten("abc", 0) == "abc"
    s = shorten("x" * 100, 30)
    assert s.startswith("x" * 20) and s.endswith("x" * 10) and "[70 chars omitted]" in s


def test_result_without_matching_call_is_kept():
    msgs = [user("u", "q", 1), result("r", "ghost", "out", 2), asst("a", "done", 3)]
    [t] = assemble_turns(msgs, agent="x").turns
    assert [(a.name, a.call_id, a.output) for a in t.actions] == [("tool_result", "ghost", "out")]


def test_status_table():
    def run(*extra: Message) -> str:
        msgs = [user("u", "q", 1), *extra, asst("z", "final", 9), user("u2", "next", 10)]
        return assemble_turns(msgs, agent="x").turns[0].status

    call = asst("a", "", 2, calls=[ToolCall(name="t", call_id="c")])
    assert run() == "succeeded"
    assert run(status("s", "cancelled", 3)) == "cancelled"
    assert run(status("s", "failed", 3)) == "failed"
    assert run(status("s1", "failed", 3), status("s2", "cancelled", 4)) == "cancelled"
    assert run(call, result("r", "c", "err", 3, error=True)) == "failed"
    # an error that a later successful call recovered from does not fail the turn
    call2 = asst("a2", "", 4, calls=[ToolCall(name="t", call_id="c2")])
    assert run(call, result("r", "c", "err", 3, error=True), call2, result("r2", "c2", "ok", 5)) == "succeeded"


def test_injected_user_messages_do_not_open_turns():
    msgs = [user("m", "<local-command-caveat>…", 0, real=False), user("u", "q", 1),
            user("cmd", "<command-name>/clear</command-name>", 2, real=False), asst("a", "r", 3)]
    res = assemble_turns(msgs, agent="x")
    [t] = res.turns
    assert t.request == "q" and t.message_ids == ["u", "cmd", "a"]


def test_empty_real_user_message_is_skipped_and_counted():
    msgs = [user("u0", "   ", 1), user("u", "q", 2), asst("a", "r", 3)]
    res = assemble_turns(msgs, agent="x")
    assert res.skipped_empty == 1 and len(res.turns) == 1


def test_attachment_right_after_prompt_joins_request():
    msgs = [user("u", "see screenshot", 1),
            user("img", "[image: image/png]", 1.1, real=False, extra={"kind": "attachment"}),
            asst("a", "r", 2)]
    [t] = assemble_turns(msgs, agent="x").turns
    assert t.request == "see screenshot\n[image: image/png]"


def test_sidechain_folds_into_parent_turn():
    side = dict(sidechain=True)
    msgs = [
        user("u", "find sleeps", 1), asst("a", "", 2, calls=[ToolCall(name="Task", call_id="t")]),
        user("su", "sub prompt", 3, **side),
        asst("sa", "sub says hi", 4, calls=[ToolCall(name="Grep", call_id="g")], **side),
        result("sr", "g", "match", 5, **side),
        result("r", "t", "retry.py:42", 6), asst("a2", "final", 7),
    ]
    res = assemble_turns(msgs, agent="x")
    [t] = res.turns
    assert t.request == "find sleeps" and t.reply == "final"
    assert [(a.name, a.output) for a in t.actions] == [("Task", "retry.py:42"), ("Grep", "match")]
    assert t.message_ids == ["u", "a", "su", "sa", "sr", "r", "a2"]


def test_orphan_sidechain_session_is_assembled_on_its_own():
    msgs = [user("su", "survey src", 1, sidechain=True), asst("sa", "layout is…", 2, sidechain=True)]
    [t] = assemble_turns(msgs, agent="x").turns
    assert (t.request, t.reply) == ("survey src", "layout is…")


def test_sessions_are_grouped_even_when_interleaved():
    msgs = [user("u1", "q1", 1, session="A"), user("v1", "p1", 1, session="B"),
            asst("a1", "r1", 2, session="A"), asst("b1", "s1", 2, session="B")]
    res = assemble_turns(iter(msgs), agent="x")
    assert sorted((t.session_id, t.request, t.reply) for t in res.turns) == [("A", "q1", "r1"), ("B", "p1", "s1")]


def test_duplicate_source_ids_are_dropped():
    msgs = [user("u", "q", 1), asst("a", "r", 2), asst("a", "r", 2)]
    res = assemble_turns(msgs, agent="x")
    assert res.duplicates == 1 and res.turns[0].message_ids == ["u", "a"]


def test_merged_records_list_all_source_ids():
    msgs = [user("u", "q", 1), asst("a-1", "r", 2, extra={"source_ids": ["a-1", "a-2", "a-3"]})]
    [t] = assemble_turns(msgs, agent="x").turns
    assert t.message_ids == ["u", "a-1", "a-2", "a-3"]


def test_project_falls_back_to_later_cwd_and_model_to_user_model():
    msgs = [user("u", "q", 1, model="um"), asst("a", "r", 2, cwd="/later")]
    [t] = assemble_turns(msgs, agent="x").turns
    assert (t.project, t.model) == ("/later", "um")


def test_barrier_prompt_closes_the_turn_and_its_exchange_is_dropped():
    msgs = [user("u", "q", 1), asst("a", "answer", 2),
            user("h", "Review the conversation above and…", 3, real=False, extra={"kind": "harness", "barrier": True}),
            asst("h2", "(saved memories)", 4), user("u2", "q2", 5), asst("a2", "r2", 6)]
    res = assemble_turns(msgs, agent="x")
    assert [(t.request, t.reply, t.message_ids) for t in res.turns] == [
        ("q", "answer", ["u", "a"]), ("q2", "r2", ["u2", "a2"])]


def test_incremental_assembler_matches_the_function():
    from remem.sources import TurnAssembler

    msgs = [user("u1", "q1", 1), asst("a1", "r1", 2), user("u2", "q2", 3), asst("a2", "r2", 4), user("u3", "q3", 5)]
    asm = TurnAssembler("x")
    seen = []
    for m in msgs:
        asm.feed(m)
        seen.extend(t.request for t in asm.result.turns)
        asm.result.turns.clear()
    res = asm.finish()
    seen.extend(t.request for t in res.turns)
    assert seen == ["q1", "q2"] and res.incomplete == 1
    assert [t.request for t in assemble_turns(msgs, agent="x").turns] == seen
