// Goals (/goals): the GMP tree (goals -> tasks -> subtasks) with status, holders, progress and
// due state; new goals, tasks for the agent or a peer, progress, done, cancel.
import { get, post, stream } from "./api.js";
import { renderNav } from "./nav.js";
import { el, clear, time, section, button, form, act, debounce, choices, keeper } from "./ui.js";
import { rendered, who } from "./reading.js";

renderNav("goals");

const main = document.getElementById("main");
const [newSec, newBody] = section("New goal", "new-goal");
const [treeSec, tree] = section("Goals", "goals");
main.append(newSec, treeSec);

let me = null;      // this node's DID: the agent's tasks are assigned to it
let taskStatuses = [];  // from the route table (POST /api/tasks/{id}/update)
let people = [];    // [did, label] of the agent and known peers
const forms = keeper();  // the forms of the tree: a live event must not wipe what the person types

function setOptions(select, options) {
  const value = select.value;
  if (select.options.length === options.length && [...select.options].every((o, i) => o.value === options[i][0])) return;
  select.replaceChildren(...options.map(([v, l]) => el("option", { value: v, text: l })));
  if (options.some(([v]) => v === value)) select.value = value;
}

newBody.append(form([
  { name: "title", label: "title", required: true },
  { name: "description", label: "description (Markdown)", type: "textarea", rows: 2 },
  { name: "priority", label: "priority (0-1)", type: "number", step: "0.1" },
], "Create goal", async (v) => { await post("/api/goals", v); await load(); }, { cls: "goal-form" }));

const FINISHED = ["completed", "failed", "abandoned"];

function dueMark(task, due) {
  const d = due.get(task.lineage);
  if (!d) return task.next_check_ms && !FINISHED.includes(task.status)
    ? el("span", { class: "muted" }, "· next check ", time(task.next_check_ms)) : null;
  return el("span", { class: "overdue", text: `${d.state || d.due || "due"}` });
}

// A finished task's result: the summary its holder wrote, who finished it and when, and the creator's
// review (GET /api/tasks/{id}), read when the person opens it. A fold the person opened stays open
// (and is read again) when a live update redraws the tree.
const openResults = new Set();

function resultFold(t) {
  if (t.status !== "completed" && t.status !== "failed") return null;
  const body = el("div", { class: "result-body" });
  const fold = el("details", { class: "result" }, el("summary", { text: "result" }), body);
  fold.addEventListener("toggle", async () => {
    if (fold.open) openResults.add(t.lineage); else openResults.delete(t.lineage);
    if (!fold.open || body.dataset.read) return;
    body.dataset.read = "1";
    const shown = await get(`/api/tasks/${encodeURIComponent(t.lineage)}`);
    const r = shown.result || {};
    const review = shown.review ? `reviewed: ${shown.review.verdict}` : "not reviewed yet";
    clear(body, el("p", { class: "summary", text: r.summary || "(no summary)" }),
      el("p", { class: "muted" }, "by ", who((shown.names || {})[r.by] || r.by, r.by), " · ", time(r.at_ms), ` · ${review}`));
  });
  if (openResults.has(t.lineage)) fold.open = true;  // its toggle reads the result afresh
  return fold;
}

function taskNode(t, children, due) {
  const progress = typeof t.progress === "number" ? el("progress", { max: 1, value: t.progress, title: `${Math.round(t.progress * 100)}%` }) : null;
  const holders = (t.assigned_to || []).map((d, i) => who(d === me ? "the agent" : (t.assignee_names || [])[i] || `…${d.slice(-8)}`, d));
  const progressForm = forms.keep(`progress:${t.lineage}`, () => form([{ name: "progress", label: "progress (0-1)", type: "number", step: "0.1", required: true }], "Set",
    async (v) => { await post(`/api/tasks/${encodeURIComponent(t.lineage)}/progress`, v); await load(); }));
  const statusForm = forms.keep(`status:${t.lineage}`, () => form([{ name: "status", label: "status", type: "select", options: [] }], "Set status",
    async (v) => { await post(`/api/tasks/${encodeURIComponent(t.lineage)}/update`, v); await load(); }, { cls: "status-form" }));
  setOptions(statusForm.inputs.status, taskStatuses.map((x) => [x, x]));
  // Follow the task's status only when it changed: a live reload must not undo what the person picked.
  if (statusForm.dataset.shown !== t.status) {
    statusForm.inputs.status.value = t.status;
    statusForm.dataset.shown = t.status;
  }
  const li = el("li", { class: "task", data: { lineage: t.lineage } },
    el("span", { class: "title", text: t.title }), " ",
    el("span", { class: `badge status-${t.status}`, text: t.status }), " ", progress, " ",
    el("span", { class: "muted" }, ...(holders.length ? ["held by ", ...holders.flatMap((h, i) => (i ? [", ", h] : [h]))] : ["nobody holds it"])), " ", dueMark(t, due),
    t.html ? rendered(t.html, t.description, "description md") : null,
    resultFold(t),
    el("div", { class: "actions" }, progressForm, statusForm,
      button("Done", async () => { await post(`/api/tasks/${encodeURIComponent(t.lineage)}/done`, {}); await load(); }, { cls: "done" }),
      (t.assigned_to || []).includes(me)
        ? button("Give back", async () => { await post(`/api/tasks/${encodeURIComponent(t.lineage)}/release`, {}); await load(); }) : null));
  if (children.length) li.append(el("ul", { class: "tasks" }, children));
  return li;
}

function goalNode(g, tasks, due) {
  const byParent = new Map();
  for (const t of tasks) {
    const key = t.parent_task || "";
    if (!byParent.has(key)) byParent.set(key, []);
    byParent.get(key).push(t);
  }
  const branch = (parent) => (byParent.get(parent) || []).map((t) => taskNode(t, branch(t.lineage), due));
  const taskForm = forms.keep(`task:${g.lineage}`, () => form([
    { name: "title", label: "new task", required: true },
    { name: "description", label: "description (Markdown)", type: "textarea", rows: 1 },
    { name: "assignee", label: "for", type: "select", options: people },
  ], "Add task", async (v) => {
    const task = await post("/api/tasks", { goal: g.lineage, title: v.title, ...(v.description ? { description: v.description } : {}) });
    await load();  // the task exists even if the offer below is refused
    if (v.assignee) {
      await post(`/api/tasks/${encodeURIComponent(task.lineage || task.did)}/assign`, { candidates: [v.assignee] });
      await load();
    }
  }, { cls: "task-form" }));
  setOptions(taskForm.inputs.assignee, people);
  return el("div", { class: "goal", data: { lineage: g.lineage } },
    el("div", { class: "head" },
      el("span", { class: "title", text: g.title }),
      el("span", { class: `badge status-${g.status}`, text: g.status }),
      el("span", { class: "muted" }, `priority ${g.priority ?? "-"} · ${g.tasks_open ?? 0} open of ${g.tasks_total ?? 0} tasks · by `,
        who(g.author || g.creator_name || "someone", g.creator_did, "author")),
      time(g.timestamp_ms),
      g.status === "active" ? button("Cancel goal", async () => { await post(`/api/goals/${encodeURIComponent(g.lineage)}/cancel`, {}); await load(); }, { cls: "danger" }) : null),
    g.html ? rendered(g.html, g.description, "description md") : null,
    el("ul", { class: "tasks" }, branch("")), taskForm);
}

async function load() {
  const [status, goals, tasks, due, peers, statuses] = await Promise.all([
    me ? null : get("/api/status"), get("/api/goals"), get("/api/tasks"),
    get("/api/tasks/due").catch(() => []), get("/api/peers").catch(() => []),
    taskStatuses.length ? taskStatuses : choices("POST", "/api/tasks/{id}/update", "status")]);  // all at once
  if (status) me = status.did;
  taskStatuses = statuses;
  people = [["", "nobody yet"], [me, "the agent (this node)"], ...peers.map((p) => [p.did, p.name || `peer …${p.did.slice(-8)}`])];
  const dueMap = new Map((due || []).map((d) => [d.lineage, d]));
  const byGoal = new Map();
  for (const t of tasks) {
    if (!byGoal.has(t.goal_lineage)) byGoal.set(t.goal_lineage, []);
    byGoal.get(t.goal_lineage).push(t);
  }
  clear(tree, goals.length ? goals.map((g) => goalNode(g, byGoal.get(g.lineage) || [], dueMap))
    : el("p", { class: "empty", text: "no goals yet" }));
}

const reload = debounce(load);
stream(["goal", "task"], reload);
act(load);
