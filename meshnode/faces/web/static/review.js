// Review (/review): the agent's drafts as diffs (accept, reject, edit, commit), snapshots
// (roll back), and confirmations of risky tool calls (approve or reject).
import { get, post, stream } from "./api.js";
import { renderNav } from "./nav.js";
import { el, clear, time, text, pre, table, section, button, form, act, debounce, keeper } from "./ui.js";

renderNav("review");

const main = document.getElementById("main");
const [draftSec, draftBody] = section("Drafts", "drafts",
  button("Accept all", () => decide("accept", null), { cls: "accept-all" }),
  button("Reject all", () => decide("reject", null), { cls: "reject-all danger" }));
const commitForm = form([{ name: "message", label: "commit message", required: true }], "Commit accepted drafts",
  async (v) => { await post("/api/drafts/commit", v); await loadAll(); }, { cls: "commit-form" });
const [snapSec, snapBody] = section("Snapshots", "snapshots");
const [confSec, confBody] = section("Confirmations", "confirmations");
main.append(draftSec, snapSec, confSec);

function diffNode(diff) {
  const box = el("pre", { class: "diff" });
  for (const line of String(diff || "").split("\n")) {
    const cls = line.startsWith("+++") || line.startsWith("---") ? "hunk"
      : line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
    box.append(el("span", { class: cls, text: line || " " }));
  }
  return box;
}

async function decide(decision, paths) {
  const body = paths ? { decision, paths } : { decision, all: true };
  const result = await post("/api/drafts/decide", body);
  await loadDrafts();
  return result;
}

const editors = keeper();  // path -> textarea: a live event must not wipe an edit in progress

function draftNode(d) {
  const editor = editors.keep(d.path, () => el("textarea", { class: "code", rows: 10, hidden: true, attrs: { "aria-label": `content of ${d.path}` } }));
  const save = button("Save edit", async () => {
    await post("/api/drafts/edit", { path: d.path, content: editor.value });
    editors.forget(d.path);
    await loadDrafts();
  }, { cls: "save-edit" });
  save.hidden = editor.hidden;
  const edit = button("Edit", async () => {
    editor.value = diffToNew(d.diff);
    editor.hidden = false;
    save.hidden = false;
  }, { cls: "edit" });
  return el("div", { class: "draft", data: { path: d.path, status: d.status } },
    el("h3", {}, el("code", { text: d.path }), " ",
      el("span", { class: `badge status-${d.status}`, text: d.status }),
      d.deleted ? el("span", { class: "badge warn", text: "deletes the file" }) : null,
      d.conflict ? el("span", { class: "conflict", text: " conflict: the real file changed" }) : null),
    diffNode(d.diff),
    el("div", { class: "actions" },
      button("Accept", () => decide("accept", [d.path]), { cls: "accept" }),
      button("Reject", () => decide("reject", [d.path]), { cls: "reject danger" }), edit, save),
    editor);
}

/** The new side of a unified diff: a starting point for an edit (context and + lines). */
function diffToNew(diff) {
  const out = [];
  for (const line of String(diff || "").split("\n")) {
    if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("@@")) continue;
    if (line.startsWith("+") || line.startsWith(" ")) out.push(line.slice(1));
  }
  return out.join("\n");
}

async function loadDrafts() {
  const r = await get("/api/drafts");
  const drafts = r.drafts || [];
  const parts = [];
  if (r.submission) {
    parts.push(el("div", { class: "submission" }, el("h3", { text: "The agent's submission" }),
      el("p", { text: r.submission.summary || "" }), r.submission.reflection ? pre(r.submission.reflection) : null));
  }
  parts.push(...(drafts.length ? drafts.map(draftNode) : [el("p", { class: "empty", text: "no open drafts" })]));
  if (r.rejected_hidden) parts.push(el("p", { class: "muted", text: `${r.rejected_hidden} rejected drafts hidden` }));
  if (drafts.some((d) => d.status === "accepted")) parts.push(commitForm);
  clear(draftBody, parts);
}

async function loadSnapshots() {
  const rows = await get("/api/snapshots");
  clear(snapBody, table(rows, [
    { key: "id" }, { key: "time", time: true }, { key: "reason" },
    { key: "paths", render: (s) => (s.paths || []).join(", ") }, { key: "restored_from", label: "restored from" },
    { key: "", label: "", render: (s) => button("Roll back", async () => {
      if (!window.confirm(`Roll back to snapshot ${s.id}? Files: ${(s.paths || []).join(", ")}`)) return;
      await post(`/api/snapshots/${s.id}/rollback`, {});
      await loadAll();
    }, { cls: "rollback" }) },
  ], { empty: "no snapshots", rowData: (s) => ({ id: s.id }) }));
}

async function loadConfirmations() {
  const rows = await get("/api/confirmations", { all: true, limit: 20 });  // decided ones stay, with their outcome
  clear(confBody, table(rows, [
    { key: "id" }, { key: "tool" }, { key: "args", max: 400 }, { key: "risk" }, { key: "reason" },
    { key: "status", render: (c) => el("span", { class: `status-${c.status}`, text: c.status }) },
    { key: "created_ms", label: "asked" }, { key: "expires_ms", label: "expires" },
    { key: "", label: "", render: (c) => c.status !== "pending" ? text(c.decided_by ? `by ${c.decided_by}` : "") : el("span", { class: "actions" },
      button("Approve", async () => { await post(`/api/confirmations/${c.id}`, { approve: true }); await loadConfirmations(); }, { cls: "approve" }),
      button("Reject", async () => { await post(`/api/confirmations/${c.id}`, { approve: false }); await loadConfirmations(); }, { cls: "reject danger" })) },
  ], { empty: "nothing waits for your confirmation", rowData: (c) => ({ id: c.id }) }));
}

function loadAll() {
  return Promise.all([act(loadDrafts), act(loadSnapshots), act(loadConfirmations)]);
}

const reloadDrafts = debounce(loadDrafts);
const reloadSnapshots = debounce(loadSnapshots);
const reloadConfirmations = debounce(loadConfirmations);
stream(["draft", "snapshot", "confirm", "gate"], (type) => {
  if (type === "draft") reloadDrafts();
  else if (type === "snapshot") reloadSnapshots();
  else if (type === "confirm") reloadConfirmations();
  else { reloadDrafts(); reloadSnapshots(); reloadConfirmations(); }
});
loadAll();
