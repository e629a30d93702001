// Conversation (/): threads with the agent. A message is a private note of the person's; the
// agent answers with note_add reply_to=<id>, which lands in the same thread (protocols/web.md 7).
// Each message says what is true of it: waiting for a tick, thinking (a tick with it in its prompt is
// with the LLM), the LLM failing, seen by the agent (in N prompts) or answered; the thread says the
// same of the agent (paused, off, idle), and offers only the buttons that can act now. The answer
// being written streams into a bubble (live-answer.js) until the stored reply replaces it.
import { get, post, stream } from "./api.js";
import { renderNav } from "./nav.js";
import { el, clear, time, act, debounce, olderButton } from "./ui.js";
import { renderInboxInline } from "./inbox-inline.js";
import { liveAnswer } from "./live-answer.js";

renderNav("conversation");

const main = document.getElementById("main");
const threadsList = el("ul", { class: "thread-list", id: "threads" });
const olderThreads = olderButton();
const showArchived = el("button", { type: "button", id: "show-archived", class: "link-button", text: "archived" });
const title = el("h2", { id: "thread-title", text: "New conversation" });
const renameBtn = el("button", { type: "button", id: "rename-thread", text: "Rename", hidden: true });
const archiveBtn = el("button", { type: "button", id: "archive-thread", text: "Archive", hidden: true });
const deleteBtn = el("button", { type: "button", id: "delete-thread", class: "danger", text: "Delete", hidden: true });
const renameInput = el("input", { type: "text", id: "rename-input", maxLength: 200, attrs: { "aria-label": "new title" } });
const renameForm = el("form", { class: "rename-form", id: "rename-form", hidden: true }, renameInput,
  el("button", { type: "submit", class: "primary", text: "Save" }),
  el("button", { type: "button", text: "Cancel", on: { click: () => { renameForm.hidden = true; } } }));
const confirmDelete = el("div", { class: "confirm-delete", id: "confirm-delete", hidden: true, attrs: { role: "alertdialog", "aria-label": "delete this conversation?" } },
  el("span", { text: "Delete this conversation? Its messages are hidden and the agent no longer sees them. " }),
  el("button", { type: "button", id: "confirm-delete-yes", class: "danger", text: "Delete it", on: { click: () => act(deleteThread) } }),
  el("button", { type: "button", text: "Keep it", on: { click: () => { confirmDelete.hidden = true; } } }));
const messages = el("div", { class: "messages", id: "messages", attrs: { "aria-live": "polite" } });
const olderMessages = olderButton("older messages");
const agentStatus = el("p", { class: "agent-status", id: "agent-status", attrs: { "aria-live": "polite" } });
const tickNow = el("button", { type: "button", id: "tick-now", text: "Tick now", hidden: true });
const pauseBtn = el("button", { type: "button", id: "pause", text: "Pause the agent", hidden: true });
const resumeBtn = el("button", { type: "button", id: "resume", class: "primary", text: "Resume the agent", hidden: true });
const input = el("textarea", { id: "message", name: "text", rows: 3, placeholder: "Write to the agent (Ctrl+Enter sends; Markdown works)", attrs: { "aria-label": "message" } });
const send = el("button", { type: "submit", id: "send", class: "primary", text: "Send" });
const composer = el("form", { class: "composer", id: "composer" }, input, el("div", { class: "actions" }, send));
const newThread = el("button", { type: "button", id: "new-thread", text: "New thread" });
const threadPanel = el("section", { class: "panel", id: "thread" },
  el("div", { class: "panel-head" }, title, el("div", { class: "thread-actions" }, renameBtn, archiveBtn, deleteBtn)),
  renameForm, confirmDelete, olderMessages, messages,
  el("div", { class: "agent-bar" }, agentStatus, el("div", { class: "actions" }, tickNow, pauseBtn, resumeBtn)), composer);

main.append(el("div", { class: "columns" },
  el("aside", { class: "panel" }, el("div", { class: "panel-head" }, el("h2", { id: "threads-title", text: "Threads" }), newThread), threadsList, olderThreads, showArchived),
  threadPanel));

let current = new URLSearchParams(location.search).get("thread");
let archivedView = false;
let shown = [];        // messages of the open thread, oldest first
let info = null;       // the open thread's {title, renamed, archived}
let woke = false;      // the last send woke the agent
let agent = { mode: "?", paused: false, idle: false, last_error: null, asking: null };
const live = liveAnswer(threadPanel, {
  wants: (d) => Boolean(current) && (d.threads || []).includes(current), reply: true,
  before: threadPanel.querySelector(".agent-bar"),
});

/** Sanitized HTML from the server (markdown.py: markdown-it-py, then nh3) into a node. */
function rendered(html, fallback) {
  const body = el("div", { class: "body md" });
  if (typeof html === "string") {
    const t = document.createElement("template");
    t.innerHTML = html;  // the server's sanitized output, never the raw text
    body.append(t.content);
  } else body.textContent = fallback;
  return body;
}

function openThread(tid) {
  current = tid;
  woke = false;
  info = null;
  live.done();
  const url = new URL(location.href);
  if (tid) url.searchParams.set("thread", tid); else url.searchParams.delete("thread");
  history.replaceState(null, "", url);
  for (const a of threadsList.querySelectorAll("a")) a.classList.toggle("current", a.dataset.thread === tid);
  shown = [];
  clear(messages);
  title.textContent = tid ? "Thread" : "New conversation";
  renameForm.hidden = true; confirmDelete.hidden = true;
  paintControls();
  act(loadThread);
  input.focus();
}

function threadItem(t) {
  const unread = t.unread_by_agent ? el("span", { class: "unread-mark", text: ` ${t.unread_by_agent} not answered` }) : null;
  const a = el("a", { href: `/?thread=${encodeURIComponent(t.thread)}`, class: t.thread === current ? "current" : "", data: { thread: t.thread } },
    el("span", { class: "title", text: t.title || t.thread }),
    el("span", { class: "last", text: `${t.last_side === "agent" ? "agent: " : "you: "}${t.last_text || ""}` }),
    time(t.last_ms), unread);
  a.addEventListener("click", (e) => { e.preventDefault(); openThread(t.thread); });
  return el("li", {}, a);
}

async function loadThreads(before = null) {
  const rows = await get("/api/threads", { ...(before ? { before } : {}), ...(archivedView ? { archived: "true" } : {}) });
  if (!before) clear(threadsList);
  threadsList.append(...rows.map(threadItem));
  if (!before && rows.length === 0) threadsList.append(el("li", { class: "empty", text: archivedView ? "no archived conversations" : "no conversations yet" }));
  olderThreads.offer(rows.length >= 50, () => loadThreads(rows[rows.length - 1].last_ms));
}

function askingFor(did) {
  return Boolean(agent.asking && (agent.asking.messages || []).includes(did));
}

/** [state, words] of a message from the person or a party: what is true of it now. */
function messageState(m) {
  if (m.answered) return ["answered", m.answered > 1 ? `answered (${m.answered} replies)` : "answered"];
  if (agent.mode === "core_outage") return ["failing", `not answered: the LLM is failing (${agent.last_error || "no LLM answers"})`];
  if (askingFor(m.did)) return ["thinking", `thinking: tick ${agent.asking.tick} has this in its prompt`];
  if (m.seen) return ["seen", `seen by the agent in ${m.seen.prompts} prompt${m.seen.prompts === 1 ? "" : "s"}, not answered`];
  if (m.read) return ["read", "read by the agent, not answered"];
  if (agent.paused) return ["paused", "waiting: the agent is paused"];
  if (agent.mode === "off") return ["off", "nobody reads this: the agent's cognition is off"];
  return ["waiting", "waiting for a tick: the agent has not seen this yet"];
}

function speaker(m) {
  if (m.side === "person") return "You";
  if (m.side === "agent") return "Agent";
  return m.name ? `${m.name} (${m.from === "a2a" ? "A2A party" : m.from})` : (m.who || "someone else");
}

function replyLine(r) {
  const who = r.side === "person" ? "you" : r.side === "agent" ? "the agent" : r.who;
  return el("span", { class: "replying-to", title: r.did }, `in reply to ${who}: “${r.words}”`);
}

function messageNode(m) {
  const meta = [time(m.time_ms)];
  if (m.side !== "agent") {
    const [state, words] = messageState(m);
    meta.push(" · ", el("span", { class: `state ${state}`, data: { state }, text: words }));
  }
  for (const r of m.replying_to || []) meta.push(" · ", replyLine(r));
  return el("article", { class: `msg ${m.side}`, data: { did: m.did, side: m.side } },
    el("span", { class: "who", text: speaker(m) }),
    rendered(m.html, m.text),
    el("div", { class: "meta" }, meta));
}

function paintStates() {
  for (const m of shown) {
    if (m.side === "agent") continue;
    const node = messages.querySelector(`article[data-did="${CSS.escape(m.did)}"] .state`);
    if (!node) continue;
    const [state, words] = messageState(m);
    node.className = `state ${state}`; node.dataset.state = state; node.textContent = words;
  }
}

async function loadThread(before = null) {
  if (!before) renderInboxInline(document.getElementById("thread"), current);
  if (!current) { paintStatus(); return; }
  const tid = current;
  const result = await get(`/api/threads/${encodeURIComponent(tid)}`, before ? { before } : {});
  if (tid !== current) return;
  if (result.agent) agent = { ...agent, ...result.agent };
  info = { title: result.title, renamed: result.renamed, archived: result.archived };
  const got = result.messages || [];
  shown = before ? [...got, ...shown] : got;
  clear(messages, shown.map(messageNode));
  title.textContent = result.title || (shown.length ? shown[0].text.slice(0, 80) : "Thread");
  olderMessages.offer(got.length >= 100, () => loadThread(shown[0].time_ms));
  if (!before) messages.lastElementChild?.scrollIntoView({ block: "nearest" });
  paintStatus();
}

function paintControls() {
  const open = Boolean(current);
  renameBtn.hidden = !open;
  deleteBtn.hidden = !open;
  archiveBtn.hidden = !open;
  archiveBtn.textContent = info && info.archived ? "Unarchive" : "Archive";
  const on = agent.mode !== "off" && agent.mode !== "?";
  pauseBtn.hidden = !on || agent.paused;
  resumeBtn.hidden = !on || !agent.paused;
  tickNow.hidden = !on || agent.paused || Boolean(agent.asking);
}

function paintStatus() {
  const last = [...shown].reverse().find((m) => m.side !== "agent");
  const waiting = last && !last.answered;
  const thinking = agent.asking && current && (agent.asking.threads || []).includes(current);
  let s, state;
  if (agent.mode === "off") [state, s] = ["off", "the agent's cognition is off: nobody will answer here"];
  else if (agent.paused) [state, s] = ["paused", `the agent is paused${agent.paused_by ? ` (by ${agent.paused_by})` : ""}: ${waiting ? "your message waits until it is resumed" : "it does not think until resumed"}`];
  else if (agent.mode === "core_outage") [state, s] = ["failing", `the LLM is failing: ${agent.last_error || "no LLM answers"}`];
  else if (thinking) [state, s] = ["thinking", `thinking: tick ${agent.asking.tick} is with the LLM${agent.asking.llm ? ` (${agent.asking.llm})` : ""}`];
  else if (!waiting) [state, s] = last ? ["answered", "the agent answered"] : ["", ""];
  else if (woke && !last.seen) [state, s] = ["waiting", "woken by your message: waiting for its tick"];
  else if (last.seen) [state, s] = ["seen", `seen by the agent in ${last.seen.prompts} prompt${last.seen.prompts === 1 ? "" : "s"}, not answered yet`];
  else if (agent.idle) [state, s] = ["waiting", "idle: the agent will see your message when it wakes"];
  else [state, s] = ["waiting", "waiting for a tick"];
  agentStatus.textContent = s;
  agentStatus.dataset.state = state;
  paintStates();
  paintControls();
}

async function sendMessage() {
  const text = input.value.trim();
  if (!text) return;
  send.disabled = true;
  try {
    const ok = await act(async () => {
      const result = current ? await post(`/api/threads/${encodeURIComponent(current)}`, { text })
        : await post("/api/threads", { text });
      input.value = "";
      if (archivedView) { archivedView = false; showArchived.textContent = "archived"; }
      if (result.thread !== current) openThread(result.thread); else await loadThread();
      woke = Boolean(result.woke);
      paintStatus();
      await loadThreads();
    });
    if (ok === false) input.focus();
  } finally { send.disabled = false; }
}

async function agentCall(path) {
  const status = await post(path);
  agent = { ...agent, ...status };
  paintStatus();
}

async function deleteThread() {
  const tid = current;
  await post(`/api/threads/${encodeURIComponent(tid)}/delete`);
  confirmDelete.hidden = true;
  openThread(null);
  await loadThreads();
}

composer.addEventListener("submit", (e) => { e.preventDefault(); sendMessage(); });
input.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); sendMessage(); } });
newThread.addEventListener("click", () => openThread(null));
tickNow.addEventListener("click", () => act(() => agentCall("/api/mind/tick")));
pauseBtn.addEventListener("click", () => act(() => agentCall("/api/mind/pause")));
resumeBtn.addEventListener("click", () => act(() => agentCall("/api/mind/resume")));
renameBtn.addEventListener("click", () => {
  renameInput.value = info && info.renamed ? info.title : "";
  renameInput.placeholder = title.textContent;
  renameForm.hidden = false; confirmDelete.hidden = true;
  renameInput.focus();
});
renameForm.addEventListener("submit", (e) => {
  e.preventDefault();
  act(async () => {
    await post(`/api/threads/${encodeURIComponent(current)}/rename`, { title: renameInput.value });
    renameForm.hidden = true;
    await loadThread(); await loadThreads();
  });
});
archiveBtn.addEventListener("click", () => act(async () => {
  const archived = !(info && info.archived);
  await post(`/api/threads/${encodeURIComponent(current)}/archive`, { archived });
  await loadThread(); await loadThreads();
}));
deleteBtn.addEventListener("click", () => { confirmDelete.hidden = false; renameForm.hidden = true; });
showArchived.addEventListener("click", () => {
  archivedView = !archivedView;
  showArchived.textContent = archivedView ? "current conversations" : "archived";
  document.getElementById("threads-title").textContent = archivedView ? "Archived threads" : "Threads";
  act(() => loadThreads());
});

const reloadThread = debounce(() => loadThread());
const reloadThreads = debounce(() => loadThreads());
stream(["chat", "tick", "mode"], (type, data) => {
  if (type === "mode" && data) {
    for (const k of ["mode", "idle", "paused", "llm", "last_error", "asking"]) if (k in data) agent[k] = data[k];
    if ("paused" in data && !data.paused) agent.paused_by = null;
    paintStatus();
    return;
  }
  if (type === "chat" && data && data.thread === current) {
    if (data.side === "agent") { woke = false; live.settle(); }  // answered: the stored reply replaces the bubble
    reloadThread();
  } else if (type === "tick" && current) { live.settle(data && data.tick); reloadThread(); }
  if (type === "chat") reloadThreads();
});

act(loadThreads);
act(loadThread);
