// Knowledge (/knowledge): notes (paged, searched, filtered), diary, concepts, links; one note
// with its versions; add, tag, edit, delete (as `meshnode edit`).
import { get, post, stream } from "./api.js";
import { renderNav } from "./nav.js";
import { el, clear, time, facts, table, section, button, form, list, act, debounce, olderButton } from "./ui.js";

renderNav("knowledge");

const main = document.getElementById("main");
const [notesSec, notesBody] = section("Notes", "notes");
const [oneSec, oneBody] = section("Note", "note");
const [searchSec, searchBody] = section("Search everything", "search");
const [diarySec, diaryBody] = section("Diary", "diary");
const [conceptSec, conceptBody] = section("Concepts", "concepts");
const [linkSec, linkBody] = section("Links", "links");
oneSec.hidden = true;
main.append(notesSec, oneSec, searchSec, diarySec, conceptSec, linkSec);

let filters = {};
const noteList = el("div", { class: "note-list", id: "note-list" });
const olderNotes = olderButton();
const addNote = form([
  { name: "text", label: "new note", type: "textarea", required: true, rows: 2 },
  { name: "topic", label: "topic" },
  { name: "audience", label: "audience", type: "select", options: [["private", "private"], ["friends", "friends"], ["public", "public"]] },
], "Add note", async (v) => { await post("/api/notes", v); await loadNotes(); }, { cls: "add-note" });
const filterForm = form([
  { name: "q", label: "text contains" }, { name: "source", label: "source" }, { name: "topic", label: "topic" },
  { name: "unread", label: "unread only", type: "checkbox" },
], "Filter", async (v) => { filters = { ...v }; if (!filters.unread) delete filters.unread; await loadNotes(); return false; }, { cls: "filter" });
notesBody.append(addNote, filterForm, noteList, olderNotes);

// who wrote a note: a peer by its name; this node's own by who asked for it (app.actor's described)
function writer(n) {
  const via = n.asked_via ? ` (${n.asked_via})` : "";
  switch (n.asked_kind) {
    case "person": return `the person${via}`;
    case "agent": return n.asked_via === "task" ? "the agent (task loop)" : "the agent";
    case "node": return `this node${via}`;
    case "a2a": return `A2A party ${n.asked_label || n.asked_id || "?"} (${(n.asked_id || "").startsWith("known:") ? "known" : "unknown"})`;
    case "peer": return `peer ${n.author_name || (n.author_did || "").slice(-8)}`;
    default: return n.author_name || (n.author_did || "").slice(-8);
  }
}

function noteNode(n) {
  return el("article", { class: `note ${n.read ? "read" : "unread"}`, data: { did: n.container_did } },
    el("div", { class: "meta muted" }, time(n.timestamp), ` · ${writer(n)} · ${n.audience || ""}`,
      n.topic ? ` · topic ${n.topic}` : "", n.read ? "" : " · unread", (n.tags || []).length ? ` · tags ${n.tags.join(", ")}` : ""),
    el("div", { class: "note-text body", text: n.text }),
    el("div", { class: "actions" },
      button("Open", () => showNote(n.container_did)),
      n.read ? null : button("Mark read", async () => { await post(`/api/notes/${encodeURIComponent(n.container_did)}/read`, {}); await loadNotes(); })));
}

async function loadNotes(before = null) {
  const rows = await get("/api/notes", { limit: 50, ...filters, ...(before != null ? { before } : {}) });
  if (before == null) clear(noteList);
  noteList.append(...rows.map(noteNode));
  if (before == null && !rows.length) noteList.append(el("p", { class: "empty", text: "no notes" }));
  olderNotes.offer(rows.length >= 50, () => loadNotes(rows[rows.length - 1].container_did));
}

async function showNote(did) {
  const n = await get(`/api/notes/${encodeURIComponent(did)}`);
  const id = encodeURIComponent(did);
  const shownKeys = Object.keys(n).filter((k) => k !== "text" && k !== "versions");
  oneSec.hidden = false;
  clear(oneBody, el("div", { class: "note-text body", text: n.text ?? "" }), facts(n, shownKeys),
    n.versions ? el("div", {}, el("h3", { text: "Versions" }), table(n.versions)) : null,
    form([{ name: "add", label: "add tags (a, b)" }, { name: "remove", label: "remove tags" }], "Tag",
      async (v) => { await post(`/api/notes/${id}/tags`, { add: list(v.add), remove: list(v.remove) }); await showNote(did); await loadNotes(); }),
    form([{ name: "text", label: "new text", type: "textarea", required: true }], "Save new version",
      async (v) => { const r = await post("/api/edits", { op: "note_update", id: did, text: v.text }); await loadNotes(); if (r && r.did) await showNote(r.did); }),
    el("div", { class: "actions" }, button("Delete", async () => {
      if (!window.confirm("Hide this note?")) return;
      await post("/api/edits", { op: "note_delete", id: did });
      oneSec.hidden = true;
      await loadNotes();
    }, { cls: "danger" })));
  oneSec.scrollIntoView({ block: "nearest" });
}

const searchResult = el("div");
searchBody.append(form([{ name: "q", label: "words", required: true }], "Search",
  async (v) => { clear(searchResult, table(await get("/api/search", { q: v.q }), null, { empty: "nothing found" })); return false; }), searchResult);

function kindPanel(body, kind, fields, toBody) {
  const rows = el("div");
  body.append(form(fields, "Add", async (v) => { await post(`/api/${kind}`, toBody(v)); await loadKind(kind, rows); }), rows);
  return () => loadKind(kind, rows);
}
async function loadKind(kind, box) {
  clear(box, table(await get(`/api/${kind}`, { limit: 50 }), null, { empty: `no ${kind}` }));
}
const loaders = [
  kindPanel(diaryBody, "diary", [{ name: "text", label: "entry", type: "textarea", required: true, rows: 2 }, { name: "title", label: "title" }],
    (v) => ({ text: v.text, ...(v.title ? { title: v.title } : {}) })),
  kindPanel(conceptBody, "concepts", [{ name: "label", label: "label", required: true }, { name: "description", label: "description" }, { name: "aliases", label: "aliases (a, b)" }],
    (v) => ({ label: v.label, ...(v.description ? { description: v.description } : {}), ...(v.aliases ? { aliases: list(v.aliases) } : {}) })),
  kindPanel(linkBody, "links", [{ name: "source", label: "source", required: true }, { name: "relation", label: "relation", required: true }, { name: "targets", label: "targets (a, b)", required: true }],
    (v) => ({ source: v.source, relation: v.relation, targets: list(v.targets) })),
];

const reload = debounce(() => loadNotes());
stream(["note"], reload);
act(() => loadNotes());
for (const load of loaders) act(load);
