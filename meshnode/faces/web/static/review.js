// Review (/review): the agent's drafts as diffs (accept, reject, edit, commit), snapshots
// (roll back), confirmations of risky tool calls (approve or reject), the unknown A2A parties'
// messages held for the person (approve, reject, reject all, block the party or the address) and
// the blocks (unblock).
import { get, post, stream } from "./api.js";
import { renderNav } from "./nav.js";
import { el, clear, time, text, pre, table, fold, section, button, form, act, debounce, keeper } from "./ui.js";

renderNav("review");

const main = document.getElementById("main");
const [draftSec, draftBody] = section("Drafts", "drafts",
  button("Accept all", () => decide("accept", null), { cls: "accept-all" }),
  button("Reject all", () => decide("reject", null), { cls: "reject-all danger" }));
const commitForm = form([{ name: "message", label: "commit message", required: true }], "Commit accepted drafts",
  async (v) => { await post("/api/drafts/commit", v); await loadAll(); }, { cls: "commit-form" });
const [snapSec, snapBody] = section("Snapshots", "snapshots");
const [confSec, confBody] = section("Confirmations", "confirmations");
const [heldSec, heldBody] = section("Held A2A messages", "a2a-held",
  button("Reject all", async () => {
    if (!window.confirm("Reject every held A2A message?")) return;
    await post("/api/a2a/reject", { all: true });
    await loadHeld();
  }, { cls: "reject-all-held danger" }));
const [blockSec, blockBody] = section("Blocked A2A parties and addresses", "a2a-blocks");
const blockForm = form([{ name: "target", label: "party or address", required: true,
  placeholder: "a party's name, 192.0.2.7 or 203.0.113.0/24" }], "Block",
async (v) => { await post("/api/a2a/block", v); await loadHeld(); }, { cls: "block-form" });
main.append(draftSec, snapSec, confSec, heldSec, blockSec);

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

// a confirmation's status as a person says it (the raw status stays in the class)
const STATUS_WORDS = { pending: "waiting for you", approved: "approved", rejected: "rejected", expired: "expired", done: "done", failed: "failed" };

function argsLabel(args) {
  const keys = Object.keys(args);
  return keys.length ? `${keys.slice(0, 3).join(", ")}${keys.length > 3 ? "…" : ""}` : "nothing";
}

async function loadConfirmations() {
  const rows = await get("/api/confirmations", { all: true, limit: 20 });  // decided ones stay, with their outcome
  clear(confBody, table(rows, [
    { key: "id" }, { key: "tool", render: (c) => el("span", { class: "nowrap", text: String(c.tool ?? "").replace(/_/g, " "), title: c.tool }) },
    { key: "args", label: "with", render: (c) => (c.args && typeof c.args === "object" ? fold(c.args, argsLabel(c.args)) : text(c.args, 400)) },
    { key: "risk" }, { key: "reason" },
    { key: "status", render: (c) => el("span", { class: `status status-${c.status}`, text: STATUS_WORDS[c.status] || String(c.status ?? "").replace(/_/g, " ") }) },
    { key: "created_ms", label: "asked" }, { key: "expires_ms", label: "expires" },
    { key: "", label: "", render: (c) => c.status !== "pending" ? text(c.decided_by ? `by ${c.decided_by}` : "") : el("span", { class: "actions" },
      button("Approve", async () => { await post(`/api/confirmations/${c.id}`, { approve: true }); await loadConfirmations(); }, { cls: "approve" }),
      button("Reject", async () => { await post(`/api/confirmations/${c.id}`, { approve: false }); await loadConfirmations(); }, { cls: "reject danger" })) },
  ], { empty: "nothing waits for your confirmation", rowData: (c) => ({ id: c.id }) }));
}

async function block(target) {
  if (!window.confirm(`Block ${target}? Its requests are refused from now on and its held messages rejected.`)) return;
  await post("/api/a2a/block", { target });
  await Promise.all([loadHeld(), loadConfirmations()]);
}

async function loadHeld() {
  const [rows, blocks] = await Promise.all([get("/api/a2a/held", { limit: 200 }), get("/api/a2a/blocks")]);
  clear(heldBody, table(rows, [
    { key: "id" }, { key: "sender", label: "says it is" }, { key: "client", label: "address" }, { key: "subnet" },
    { key: "text", label: "message", max: 600 }, { key: "created_ms", label: "came" },
    { key: "expires_ms", label: "expires" },
    { key: "", label: "", render: (h) => el("span", { class: "actions" },
      button("Approve", async () => { await post(`/api/confirmations/${h.id}`, { approve: true }); await loadHeld(); }, { cls: "approve" }),
      button("Reject", async () => { await post(`/api/confirmations/${h.id}`, { approve: false }); await loadHeld(); }, { cls: "reject danger" }),
      button("Block party", () => block(h.party), { cls: "block-party danger" }),
      button("Block address", () => block(h.client), { cls: "block-address danger" })) },
  ], { empty: "no A2A message waits for you", rowData: (h) => ({ id: h.id }) }));
  clear(blockBody, table(blocks, [
    { key: "kind" }, { key: "target" }, { key: "created_ms", label: "since" }, { key: "decided_by", label: "by" },
    { key: "", label: "", render: (b) => button("Unblock", async () => {
      await post("/api/a2a/unblock", { target: b.target });
      await loadHeld();
    }, { cls: "unblock" }) },
  ], { empty: "nobody is blocked", rowData: (b) => ({ target: b.target }) }), blockForm);
}

function loadAll() {
  return Promise.all([act(loadDrafts), act(loadSnapshots), act(loadConfirmations), act(loadHeld)]);
}

const reloadDrafts = debounce(loadDrafts);
const reloadSnapshots = debounce(loadSnapshots);
const reloadConfirmations = debounce(() => Promise.all([act(loadConfirmations), act(loadHeld)]));
stream(["draft", "snapshot", "confirm", "gate"], (type) => {
  if (type === "draft") reloadDrafts();
  else if (type === "snapshot") reloadSnapshots();
  else if (type === "confirm") reloadConfirmations();
  else { reloadDrafts(); reloadSnapshots(); reloadConfirmations(); }
});
loadAll();
