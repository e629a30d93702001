// Conversation (/): threads with the agent. A message is a private note of the person's; the
// agent answers with note_add reply_to=<id>, which lands in the same thread (protocols/web.md 7).
import { get, post, stream } from "./api.js";
import { renderNav, onMode, modeState } from "./nav.js";
import { el, clear, time, act, debounce, olderButton } from "./ui.js";
import { renderInboxInline } from "./inbox-inline.js";

renderNav("conversation");

const main = document.getElementById("main");
const threadsList = el("ul", { class: "thread-list", id: "threads" });
const olderThreads = olderButton();
const title = el("h2", { id: "thread-title", text: "New conversation" });
const messages = el("div", { class: "messages", id: "messages", attrs: { "aria-live": "polite" } });
const olderMessages = olderButton("older messages");
const agentStatus = el("p", { class: "agent-status", id: "agent-status" });
const input = el("textarea", { id: "message", name: "text", rows: 3, placeholder: "Write to the agent (Ctrl+Enter sends)", attrs: { "aria-label": "message" } });
const send = el("button", { type: "submit", id: "send", class: "primary", text: "Send" });
const composer = el("form", { class: "composer", id: "composer" }, input, el("div", { class: "actions" }, send));
const newThread = el("button", { type: "button", id: "new-thread", text: "New thread" });

main.append(el("div", { class: "columns" },
  el("aside", { class: "panel" }, el("div", { class: "panel-head" }, el("h2", { text: "Threads" }), newThread), threadsList, olderThreads),
  el("section", { class: "panel", id: "thread" }, el("div", { class: "panel-head" }, title), olderMessages, messages, agentStatus, composer)));

let current = new URLSearchParams(location.search).get("thread");
let shown = [];        // messages of the open thread, oldest first
let woke = false;      // the last send woke the agent

function openThread(tid) {
  current = tid;
  woke = false;
  const url = new URL(location.href);
  if (tid) url.searchParams.set("thread", tid); else url.searchParams.delete("thread");
  history.replaceState(null, "", url);
  for (const a of threadsList.querySelectorAll("a")) a.classList.toggle("current", a.dataset.thread === tid);
  shown = [];
  clear(messages);
  title.textContent = tid ? "Thread" : "New conversation";
  act(loadThread);
  input.focus();
}

function threadItem(t) {
  const unread = t.unread_by_agent ? el("span", { class: "unread-mark", text: ` ${t.unread_by_agent} unread by the agent` }) : null;
  const a = el("a", { href: `/?thread=${encodeURIComponent(t.thread)}`, class: t.thread === current ? "current" : "", data: { thread: t.thread } },
    el("span", { class: "title", text: t.title || t.thread }),
    el("span", { class: "last", text: `${t.last_side === "agent" ? "agent: " : "you: "}${t.last_text || ""}` }),
    time(t.last_ms), unread);
  a.addEventListener("click", (e) => { e.preventDefault(); openThread(t.thread); });
  return el("li", {}, a);
}

async function loadThreads(before = null) {
  const rows = await get("/api/threads", before ? { before } : {});
  if (!before) clear(threadsList);
  threadsList.append(...rows.map(threadItem));
  if (!before && rows.length === 0) threadsList.append(el("li", { class: "empty", text: "no conversations yet" }));
  olderThreads.offer(rows.length >= 50, () => loadThreads(rows[rows.length - 1].last_ms));
}

function messageNode(m) {
  const person = m.side === "person";
  const meta = [time(m.time_ms)];
  if (person) meta.push(" · ", el("span", { class: m.read ? "read" : "unread", text: m.read ? "read by the agent" : "the agent has not read this yet" }));
  else if (m.in_reply_to && m.in_reply_to.length) meta.push(" · in reply to ", el("code", { text: m.in_reply_to[0].slice(-10), title: m.in_reply_to.join(" ") }));
  return el("article", { class: `msg ${person ? "person" : "agent"}`, data: { did: m.did, side: m.side } },
    el("span", { class: "who", text: person ? "You" : "Agent" }),
    el("div", { class: "body", text: m.text }),
    el("div", { class: "meta" }, meta));
}

async function loadThread(before = null) {
  if (!before) renderInboxInline(document.getElementById("thread"), current);
  if (!current) { paintStatus(); return; }
  const tid = current;
  const result = await get(`/api/threads/${encodeURIComponent(tid)}`, before ? { before } : {});
  if (tid !== current) return;
  const got = result.messages || [];
  shown = before ? [...got, ...shown] : got;
  clear(messages, shown.map(messageNode));
  if (shown.length) title.textContent = shown[0].text.slice(0, 80);
  olderMessages.offer(got.length >= 100, () => loadThread(shown[0].time_ms));
  if (!before) messages.lastElementChild?.scrollIntoView({ block: "nearest" });
  paintStatus();
}

function paintStatus() {
  const m = modeState();
  const last = shown[shown.length - 1];
  const waiting = last && last.side === "person";
  let s;
  if (m.paused) s = waiting ? "the agent is paused: your message waits until it is resumed" : "the agent is paused";
  else if (m.mode === "off") s = "the agent's cognition is off: nobody will answer here";
  else if (!waiting) s = last ? "the agent answered" : "";
  else if (woke) s = "woken by your message: thinking";
  else if (m.idle) s = "idle: the agent will see your message when it wakes";
  else s = last.read ? "the agent has read this: thinking" : "thinking: the agent has not read this yet";
  agentStatus.textContent = s;
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
      if (result.thread !== current) openThread(result.thread); else await loadThread();
      woke = Boolean(result.woke);
      paintStatus();
      await loadThreads();
    });
    if (ok === false) input.focus();
  } finally { send.disabled = false; }
}

composer.addEventListener("submit", (e) => { e.preventDefault(); sendMessage(); });
input.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); sendMessage(); } });
newThread.addEventListener("click", () => openThread(null));
onMode(paintStatus);

const reloadThread = debounce(() => loadThread());
const reloadThreads = debounce(() => loadThreads());
stream(["chat", "tick"], (type, data) => {
  if (type === "chat" && data && data.thread === current) {
    if (data.side === "agent") woke = false;  // answered; the person's own message (echoed) changes nothing
    reloadThread();
  }
  else if (type === "tick" && current) reloadThread();
  if (type === "chat") reloadThreads();
});

act(loadThreads);
act(loadThread);
