// remem.js — remem long-term memory for OpenCode. Installed by `remem hooks install opencode`;
// `remem hooks remove opencode` deletes this file. Do not edit: it is rewritten on install.
//
// chat.message        start the turn, inject recalled memories (a synthetic text part), /remem-resume
// tool.execute.*      record the tool trajectory (remem's own tools excluded); a failed call goes to
//                     the hook, whose repair packet (the same error family failed again) is appended
//                     to the tool's output, so the model reads it with the failure
// event               assistant text, session.error (turn failed), session.idle (turn complete)
// tools               remem_memory_search, remem_memory_get, remem_memory_add
//
// Every call goes through remem's hook process (daemon over HTTP, SQLite fallback), which never
// fails the agent: on any problem it answers nothing and logs to REMEM_HOME/logs/hooks.log.
import { spawn } from "node:child_process"

const HOOK = {{HOOK_ARGV}}
const AGENT = "opencode"
const TIMEOUT_MS = 50000
const MAX_OUTPUT = 4000

function callHook(event, payload) {
  return new Promise((resolve) => {
    let out = ""
    let done = false
    const finish = (value) => { if (!done) { done = true; clearTimeout(timer); resolve(value) } }
    let child
    try {
      child = spawn(HOOK[0], [...HOOK.slice(1), AGENT, event], { stdio: ["pipe", "pipe", "ignore"] })
    } catch (e) { return resolve(null) }
    const timer = setTimeout(() => { try { child.kill("SIGKILL") } catch (e) {} finish(null) }, TIMEOUT_MS)
    child.on("error", () => finish(null))
    child.stdout.on("data", (d) => { out += d })
    child.on("close", () => {
      try { finish(out.trim() ? JSON.parse(out) : null) } catch (e) { finish(null) }
    })
    try { child.stdin.on("error", () => {}); child.stdin.end(JSON.stringify(payload)) } catch (e) {}
  })
}

function clip(text) {
  const s = typeof text === "string" ? text : JSON.stringify(text ?? "")
  return s.length > MAX_OUTPUT ? s.slice(0, MAX_OUTPUT) + "…" : s
}

function ends(text) {   // head and tail of a long output: the error line is usually at the end
  const s = typeof text === "string" ? text : JSON.stringify(text ?? "")
  return s.length > 6000 ? s.slice(0, 1500) + "\n…\n" + s.slice(-4500) : s
}

function looksFailed(output, metadata) {
  if (metadata && typeof metadata.exit === "number" && metadata.exit !== 0) return true
  if (metadata && metadata.error) return true
  return /(?:exit(?:ed)? (?:with )?code|exit status)\s*[1-9]/i.test(String(output || ""))
}

export const RememPlugin = async (ctx) => {
  const directory = ctx.directory || ctx.worktree || process.cwd()
  const turns = new Map()          // sessionID -> {prompt, tools, calls, reply, status}
  const assistant = new Set()      // message ids of assistant messages
  const pending = new Set()        // in-flight turn-end calls (flushed on dispose)

  async function complete(sessionID) {
    const t = turns.get(sessionID)
    if (!t || !t.prompt) return
    turns.delete(sessionID)
    const reply = [...t.reply.values()].join("\n").trim()
    const p = callHook("turn-end", { session_id: sessionID, cwd: directory, prompt: t.prompt, reply,
      status: t.status || "succeeded", tools: t.tools })
    pending.add(p)
    try { await p } finally { pending.delete(p) }
  }

  let tools = {}
  try {
    const { tool } = await import("@opencode-ai/plugin")
    const s = tool.schema
    tools = {
      remem_memory_search: tool({
        description: "Search remem, the long-term memory shared by all of this developer's coding agents (past requests, fixes, decisions). Returns ids, agents, projects and text.",
        args: { query: s.string().describe("what to look for"), k: s.number().optional().describe("how many (default 5)") },
        async execute(args, tctx) {
          const r = await callHook("search", { query: args.query, k: args.k || 5, session_id: tctx && tctx.sessionID, cwd: directory })
          return JSON.stringify((r && r.results) || [], null, 1)
        },
      }),
      remem_memory_get: tool({
        description: "Read one remem memory whole (request, tool trajectory, reply) by its id.",
        args: { id: s.string().describe("memory id, e.g. t_…") },
        async execute(args) {
          const r = await callHook("get", { id: args.id, cwd: directory })
          return JSON.stringify((r && r.memory) || null, null, 1)
        },
      }),
      remem_memory_add: tool({
        description: "Store a note in remem long-term memory (decisions, preferences, fixes worth keeping across sessions and agents). Never store secrets.",
        args: { text: s.string().describe("the note, self-contained") },
        async execute(args, tctx) {
          const r = await callHook("add", { text: args.text, session_id: tctx && tctx.sessionID, cwd: directory })
          return JSON.stringify((r && r.result) || { status: "not stored" })
        },
      }),
    }
  } catch (e) { tools = {} }

  return {
    tool: tools,
    "chat.message": async (input, output) => {
      const parts = (output && output.parts) || []
      const text = parts.filter((p) => p && p.type === "text" && !p.synthetic).map((p) => p.text || "").join("\n").trim()
      if (!text) return
      const sessionID = input.sessionID
      if (turns.has(sessionID)) await complete(sessionID)   // the previous turn never went idle
      turns.set(sessionID, { prompt: text, tools: [], calls: new Map(), reply: new Map(), status: "" })
      const r = await callHook("turn-start", { session_id: sessionID, prompt: text, cwd: directory })
      const context = r && r.context
      if (context && parts.length) {
        const first = parts[0]
        parts.push({ ...first, id: String(first.id).replace(/.$/, "Z") + "remem", type: "text", text: context, synthetic: true })
      }
    },
    "tool.execute.before": async (input, output) => {
      const t = turns.get(input.sessionID)
      if (!t || String(input.tool).startsWith("remem_")) return
      t.calls.set(input.callID, output && output.args)
    },
    "tool.execute.after": async (input, output) => {
      const t = turns.get(input.sessionID)
      if (!t || String(input.tool).startsWith("remem_")) return
      const args = t.calls.get(input.callID) ?? input.args
      const out = output && output.output
      const failed = looksFailed(out, output && output.metadata)
      t.tools.push({ name: String(input.tool), input: clip(args), output: clip(out), call_id: input.callID || "",
        is_error: failed })
      if (!failed) return
      const r = await callHook("tool.execute.after", { session_id: input.sessionID, cwd: directory,
        tool_name: String(input.tool), tool_input: args ?? {}, tool_use_id: input.callID || "",
        tool_response: { output: ends(out), is_error: true } })
      if (r && r.context && output) output.output = String(output.output ?? "") + "\n\n" + r.context
    },
    event: async ({ event }) => {
      const props = (event && event.properties) || {}
      switch (event && event.type) {
        case "message.updated":
          if (props.info && props.info.role === "assistant") assistant.add(props.info.id)
          break
        case "message.part.updated": {
          const part = props.part
          if (part && part.type === "text" && assistant.has(part.messageID) && !part.synthetic) {
            const t = turns.get(part.sessionID)
            if (t) t.reply.set(part.id, part.text || "")
          }
          break
        }
        case "session.error": {
          const t = turns.get(props.sessionID)
          if (t) t.status = /abort/i.test(JSON.stringify(props.error || "")) ? "cancelled" : "failed"
          break
        }
        case "session.idle":
          await complete(props.sessionID)
          break
        case "server.instance.disposed":
        case "global.disposed":
          for (const sid of [...turns.keys()]) await complete(sid)
          await Promise.allSettled([...pending])
          break
      }
    },
  }
}
