// remem — long-term memory for OpenClaw (the `memory` slot). Installed by `remem hooks install openclaw`;
// `remem hooks remove openclaw` deletes this extension and gives the slot back. Rewritten on install.
//
// before_prompt_build  recall for the prompt and inject it via prependContext (also /remem-resume picks)
// agent_end            capture the whole turn synchronously, so nothing is lost when the process exits
// /remem-resume        list up to five past episodes; answer 1–5 to continue one
// tools                remem_memory_search, remem_memory_get, remem_memory_add
import { spawn, spawnSync } from "node:child_process"

const HOOK = {{HOOK_ARGV}}
const AGENT = "openclaw"
const TIMEOUT_MS = 50000

function callHook(event, payload) {
  return new Promise((resolve) => {
    let out = ""
    let done = false
    const finish = (v) => { if (!done) { done = true; clearTimeout(timer); resolve(v) } }
    let child
    try { child = spawn(HOOK[0], [...HOOK.slice(1), AGENT, event], { stdio: ["pipe", "pipe", "ignore"] }) }
    catch (e) { return resolve(null) }
    const timer = setTimeout(() => { try { child.kill("SIGKILL") } catch (e) {} finish(null) }, TIMEOUT_MS)
    child.on("error", () => finish(null))
    child.stdout.on("data", (d) => { out += d })
    child.on("close", () => { try { finish(out.trim() ? JSON.parse(out) : null) } catch (e) { finish(null) } })
    try { child.stdin.on("error", () => {}); child.stdin.end(JSON.stringify(payload)) } catch (e) {}
  })
}

function callHookSync(event, payload) {
  try {
    const r = spawnSync(HOOK[0], [...HOOK.slice(1), AGENT, event],
      { input: JSON.stringify(payload), timeout: TIMEOUT_MS, stdio: ["pipe", "pipe", "ignore"] })
    const out = String(r.stdout || "").trim()
    return out ? JSON.parse(out) : null
  } catch (e) { return null }
}

function textOf(content) {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content.filter((c) => c && c.type === "text" && typeof c.text === "string").map((c) => c.text).join("\n")
}

// The last turn of a message list: the last real user message and everything after it.
export function lastTurn(messages) {
  const list = Array.isArray(messages) ? messages : []
  let start = -1
  for (let i = list.length - 1; i >= 0; i--) {
    const m = list[i] && (list[i].message || list[i])
    if (m && m.role === "user" && textOf(m.content).trim()) { start = i; break }
  }
  if (start < 0) return null
  const first = list[start].message || list[start]
  const tools = new Map()
  let reply = ""
  for (const item of list.slice(start + 1)) {
    const m = item && (item.message || item)
    if (!m) continue
    if (m.role === "assistant") {
      for (const c of Array.isArray(m.content) ? m.content : []) {
        if (c && c.type === "toolCall") tools.set(c.id || String(tools.size), { name: c.name || "tool",
          input: JSON.stringify(c.arguments ?? c.input ?? {}), output: "", is_error: false, call_id: c.id || "" })
      }
      const t = textOf(m.content).trim()
      if (t) reply = t
    } else if (m.role === "toolResult" || m.role === "tool") {
      const id = m.toolCallId || m.tool_call_id || ""
      const call = tools.get(id) || { name: m.toolName || "tool", input: "", call_id: id }
      call.output = textOf(m.content).slice(0, 4000)
      call.is_error = Boolean(m.isError)
      tools.set(id || String(tools.size), call)
    }
  }
  return { prompt: textOf(first.content).trim(), reply, tools: [...tools.values()] }
}

function sessionOf(ctx) {
  return String((ctx && (ctx.sessionId || ctx.sessionKey || ctx.sessionID)) || "")
}

function cwdOf(ctx) {
  return String((ctx && (ctx.workspaceDir || ctx.cwd)) || process.cwd())
}

const plugin = {
  id: "remem",
  name: "Memory (remem)",
  description: "remem: one long-term memory for all your coding agents",
  kind: "memory",
  configSchema: { type: "object", additionalProperties: false, properties: {} },
  register(api) {
    api.on("before_prompt_build", async (event, ctx) => {
      const prompt = String((event && event.prompt) || "").trim()
      if (!prompt) return undefined
      const r = await callHook("turn-start", { session_id: sessionOf(ctx), prompt, cwd: cwdOf(ctx) })
      return r && r.context ? { prependContext: r.context } : undefined
    }, { timeoutMs: TIMEOUT_MS })

    api.on("agent_end", (event, ctx) => {
      const turn = lastTurn(event && event.messages)
      if (!turn || !turn.prompt) return
      const failed = event && (event.success === false || event.error)
      callHookSync("turn-end", { ...turn, session_id: sessionOf(ctx), cwd: cwdOf(ctx),
        status: failed ? "failed" : "succeeded" })
    })

    const text = (value) => ({ content: [{ type: "text", text: typeof value === "string" ? value : JSON.stringify(value, null, 1) }] })
    api.registerTool({
      name: "remem_memory_search",
      description: "Search remem, the long-term memory shared by all of this developer's coding agents.",
      parameters: { type: "object", properties: { query: { type: "string" }, k: { type: "number" } }, required: ["query"] },
      async execute(_id, params) {
        const r = await callHook("search", { query: params.query, k: params.k || 5, cwd: process.cwd() })
        return text((r && r.results) || [])
      },
    })
    api.registerTool({
      name: "remem_memory_get",
      description: "Read one remem memory whole (request, tool trajectory, reply) by id.",
      parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      async execute(_id, params) {
        const r = await callHook("get", { id: params.id })
        return text((r && r.memory) || null)
      },
    })
    api.registerTool({
      name: "remem_memory_add",
      description: "Store a note in remem long-term memory. Never store secrets.",
      parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
      async execute(_id, params) {
        const r = await callHook("add", { text: params.text, cwd: process.cwd() })
        return text((r && r.result) || { status: "not stored" })
      },
    })
    if (typeof api.registerCommand === "function") {
      api.registerCommand({
        name: "remem-resume",
        description: "List up to five past episodes from remem; answer 1–5 to continue one",
        acceptsArgs: true,
        handler: async (ctx) => {
          const r = await callHook("resume", { query: String((ctx && ctx.args) || ""), session_id: sessionOf(ctx), cwd: cwdOf(ctx) })
          return { text: (r && r.context) || "remem is not available right now." }
        },
      })
    }
  },
}

export default plugin
