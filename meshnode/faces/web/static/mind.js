// Mind (/mind): the cycle's state, the ticks as they happen (each opens to its contexts, the
// answer and the commands), held commands with Release/Drop, validators' weights.
import { get, post, stream } from "./api.js";
import { renderNav } from "./nav.js";
import { el, time, text, pre, table, facts, fold, section, button, act, debounce, olderButton } from "./ui.js";
import { columnsOf, names } from "./reading.js";
import { liveAnswer } from "./live-answer.js";

renderNav("mind");

const main = document.getElementById("main");
// only what can be done now shows: Pause while it thinks, Resume and no "Tick now" while paused
const pauseButton = button("Pause", () => post("/api/mind/pause").then(loadState), { cls: "pause" });
const resumeButton = button("Resume", () => post("/api/mind/resume").then(loadState), { cls: "resume" });
const tickButton = button("Tick now", () => post("/api/mind/tick").then(loadState), { cls: "tick-now" });
pauseButton.hidden = resumeButton.hidden = tickButton.hidden = true;  // until the state says which
const [stateSec, stateBody] = section("State", "state", pauseButton, resumeButton, tickButton);
const [ticksSec, ticksBody] = section("Ticks", "ticks");
const tickList = el("div", { class: "tick-list", id: "tick-list" });
const olderTicks = olderButton("older ticks");
ticksBody.append(tickList, olderTicks);
liveAnswer(ticksBody, { before: tickList, keep: false });  // the answer of the tick running now, as it is written
const [heldSec, heldBody] = section("Held commands", "held",
  button("Release all", () => decide("release", null), { cls: "release-all" }),
  button("Drop all", () => decide("drop", null), { cls: "drop-all danger" }));
const [validSec, validBody] = section("Validators", "validators");
main.append(stateSec, ticksSec, heldSec, validSec);

async function loadState() {
  const m = await get("/api/mind");
  const keys = ["mode", "paused", "idle", "ticks", "llm", "last_error", "stalled", "hint"].filter((k) => k in m);
  const parts = [facts(m, keys)];
  if (m.tool_calls) parts.push(el("p", {}, `tool calls this piece of work: ${m.tool_calls.used} of ${m.tool_calls.max} `,
    button("Reset the budget", async () => { await post("/api/gate/reset-limit", {}); await loadState(); }, { cls: "reset-limit" })));
  if (m.llms && m.llms.length) parts.push(el("h3", { text: "LLMs" }), table(m.llms, [{ key: "id" }, { key: "model" }, { key: "error" }]));
  if (m.mcp_servers && m.mcp_servers.length) parts.push(el("h3", { text: "Outside tools" }), table(m.mcp_servers,
    [{ key: "server" }, { key: "status" }, { key: "tools", render: (s) => String(s.tools.length) }, { key: "error" }, { key: "stderr", label: "last stderr line" }]));
  stateBody.replaceChildren(...parts);
  stateSec.dataset.paused = m.paused ? "yes" : "no";
  pauseButton.hidden = Boolean(m.paused);
  resumeButton.hidden = !m.paused;
  tickButton.hidden = Boolean(m.paused);
  const v = [];
  if (m.validation) v.push(el("h3", { text: "Validation" }), facts(m.validation));
  const known = await names();
  v.push(el("h3", { text: "Weights" }), table(m.validators || [], columnsOf(m.validators, known), { empty: "no validators" }));
  if (m.emergency_to_revisit && m.emergency_to_revisit.length) v.push(el("h3", { text: "Decided alone, to revisit" }), table(m.emergency_to_revisit, columnsOf(m.emergency_to_revisit, known)));
  validBody.replaceChildren(...v);
}

function summaryOf(t) {
  let s = t.summary;
  if (typeof s === "string") { try { s = JSON.parse(s); } catch { s = { text: s }; } }
  return s || {};
}

function tickNode(t) {
  const s = summaryOf(t);
  const bits = [
    el("span", { class: "n", text: `#${t.tick}` }), time(t.started_ms),
    el("span", { text: t.duration_ms != null ? `${t.duration_ms} ms` : "running" }),
    el("span", { class: "badge", text: t.mode || s.mode || "" }),
    el("span", { text: t.llm_id ? `${t.llm_id}${t.llm_ms != null ? ` (${t.llm_ms} ms)` : ""}` : "no LLM" }),
  ];
  if (s.novelty !== undefined) bits.push(el("span", { text: `novelty ${s.novelty}` }));
  if (s.rating !== undefined && s.rating !== null) bits.push(el("span", { text: `rating ${s.rating}` }));
  if (s.auto_pass !== undefined) bits.push(el("span", { text: s.auto_pass ? "auto-pass" : "sent to the validators" }));
  const said = commandWords(s);
  if (said) bits.push(el("span", { class: "commands", text: said }));
  if (s.repeated) bits.push(el("span", { class: "status-held", text: "repeated" }));
  if (s.error) bits.push(el("span", { class: "error", text: s.error }));
  if (t.wake_job) bits.push(el("span", { class: "muted", text: "in a reactor wake", title: t.wake_job }));
  const body = el("div", { class: "tick-body" }, el("p", { class: "muted", text: "loading…" }));
  const d = el("details", { class: "tick", data: { tick: t.tick } }, el("summary", {}, bits), body);
  d.addEventListener("toggle", () => { if (d.open && !d.dataset.loaded) { d.dataset.loaded = "1"; act(() => fillTick(t.tick, body)); } });
  return d;
}

/** What a tick ran, in words ("" when it gave no command and refused none): the real counts only. */
function commandWords(s) {
  const n = Number(s.commands) || 0;
  const parts = [];
  if (n) {
    const verdict = s.ran === true ? "validated and run" : s.ran === false ? "held: not validated" : null;
    parts.push(`${n} ${n === 1 ? "command" : "commands"}${verdict ? ` (${verdict})` : ""}`);
  }
  if (s.refused) parts.push(`${s.refused} refused`);
  if (s.set_aside) parts.push(`set aside: ${text(s.set_aside, 40)}`);
  if (s.through_mesh) parts.push(`${s.through_mesh} through the mesh`);
  return parts.join(", ");
}

/** A held command's body (JSON text or object) in words: its type, what it says it does, its arguments. */
function commandNode(r) {
  let c = r.command;
  if (typeof c === "string") { try { c = JSON.parse(c); } catch { return el("span", { text: text(c, 300) }); } }
  c = c || {};
  const args = c.args && typeof c.args === "object" ? c.args : {};
  const keys = Object.keys(args);
  return el("div", { class: "command" },
    el("strong", { text: String(c.type || r.type || "a command").replace(/_/g, " ") }),
    c.description ? ` — ${c.description}` : "",
    keys.length ? fold(args, keys.length === 1 ? `its argument: ${keys[0]}` : `its ${keys.length} arguments: ${keys.slice(0, 4).join(", ")}${keys.length > 4 ? "…" : ""}`) : null);
}

async function fillTick(tick, body) {
  const t = await get(`/api/mind/ticks/${tick}`);
  const parts = [el("h3", { text: "Contexts" })];
  for (const c of t.contexts || []) parts.push(el("details", { class: "context" }, el("summary", { text: c.title }), pre(c.text)));
  if (!(t.contexts || []).length) parts.push(el("p", { class: "empty", text: "no prompt recorded (core outage or trimmed)" }));
  parts.push(el("h3", { text: "Answer" }), t.answer ? pre(t.answer, "answer") : el("p", { class: "empty", text: "no answer" }));
  parts.push(el("h3", { text: "Commands" }), table(t.commands || [], [{ key: "name" }, { key: "status" },
    { key: "value", render: (c) => (c.value !== null && typeof c.value === "object" ? fold(c.value) : text(c.value, 2000)) }], { empty: "no commands" }));
  if (t.held && t.held.length) parts.push(el("p", { text: `held: ${t.held.join(", ")}` }));
  if (t.response) parts.push(el("h3", { text: "Validation" }), facts(t.response, Object.keys(t.response).filter((k) => k !== "content")));
  if (t.summary) parts.push(el("h3", { text: "Summary" }), facts(summaryOf(t)));
  body.replaceChildren(...parts);
}

const LIVE_ROWS = 200;  // closed tick rows kept while ticks arrive; "older ticks" pages back

async function loadTicks(before = null) {
  const rows = await get("/api/mind/ticks", before != null ? { before } : {});
  if (before != null) tickList.append(...rows.map(tickNode));
  else {
    const have = new Set([...tickList.querySelectorAll("details.tick")].map((d) => Number(d.dataset.tick)));
    const fresh = rows.filter((t) => !have.has(Number(t.tick)));
    for (const t of fresh.reverse()) tickList.prepend(tickNode(t));  // keeps open rows open
    const closed = tickList.querySelectorAll("details.tick:not([open])");
    for (let i = closed.length - 1; i >= LIVE_ROWS; i--) closed[i].remove();  // a tab left open for hours stays small
    if (!have.size && !rows.length) tickList.replaceChildren(el("p", { class: "empty", text: "no ticks yet" }));
    else tickList.querySelector(":scope > p.empty")?.remove();
  }
  const last = tickList.querySelector("details.tick:last-of-type");
  olderTicks.offer(rows.length >= 50, () => loadTicks(Number(last.dataset.tick)));
}

async function decide(what, ids) {
  const result = await post(`/api/mind/held/${what}`, { ids });
  await loadHeld();
  return result;
}

async function loadHeld() {
  const held = await get("/api/mind/held", { status: "held" });
  const decided = (await get("/api/mind/held", { status: "all", limit: 40 })).filter((r) => r.status !== "held").slice(0, 20);
  const cols = [
    { key: "id" }, { key: "tick" }, { key: "command", label: "what it would do", render: commandNode },
    { key: "reason", label: "why it waits", render: (r) => `${String(r.kind || "").replace(/_/g, " ")}${r.reason ? `: ${r.reason}` : ""}` },
    { key: "created_ms", label: "held since" },
    { key: "status", render: (r) => el("span", { class: `status status-${r.status}`, text: r.status }) },
  ];
  heldBody.replaceChildren(
    table(held, [...cols, { key: "", label: "", render: (r) => el("span", { class: "actions" },
      button("Release", () => decide("release", [r.id]), { cls: "release" }),
      button("Drop", () => decide("drop", [r.id]), { cls: "drop danger" })) }],
    { empty: "no command waits for you", rowData: (r) => ({ id: r.id }) }),
    el("h3", { text: "Decided lately" }),
    table(decided, [...cols, { key: "decided_by", label: "by" }, { key: "result", render: (r) => (r.result && typeof r.result === "object" ? fold(r.result, "the result") : text(r.result, 500)) }],
      { empty: "none", rowData: (r) => ({ id: r.id }) }));
}

const reloadTicks = debounce(() => loadTicks());
const reloadHeld = debounce(loadHeld);
const reloadState = debounce(loadState);
stream(["tick", "command", "held", "mode"], (type) => {
  if (type === "tick") { reloadTicks(); reloadState(); }
  else if (type === "held" || type === "command") reloadHeld();
  else if (type === "mode") reloadState();
});

act(loadState);
act(() => loadTicks());
act(loadHeld);
