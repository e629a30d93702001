// Knowledge (/knowledge): notes (paged, searched, filtered), diary, concepts, links; one note
// with its versions; add, tag, edit, delete (as `meshnode edit`).
import { get, post, stream } from "./api.js";
import { renderNav } from "./nav.js";
import { el, clear, time, facts, table, section, button, form, list, act, debounce, olderButton } from "./ui.js";
import { day, rendered, who } from "./reading.js";

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

function noteNode(n) {
  return el("article", { class: `note ${n.read ? "read" : "unread"}`, data: { did: n.container_did } },
    el("div", { class: "meta muted" }, time(n.at_ms ?? n.timestamp), " · ", who(n.author, n.author_did, `author author-${n.author_kind || "node"}`),
      ` · ${n.audience || ""}`,
      n.topic ? ` · topic ${n.topic}` : "", n.read ? "" : " · unread", (n.tags || []).length ? ` · tags ${n.tags.join(", ")}` : ""),
    rendered(n.html, n.text, "note-text body md"),
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
  const hiddenKeys = new Set(["text", "html", "versions", "container_did", "agent_did", "author_name", "at_ms", "timestamp", "author_kind", "author"]);
  const shownKeys = Object.keys(n).filter((k) => !hiddenKeys.has(k));
  oneSec.hidden = false;
  clear(oneBody, el("p", { class: "meta muted" }, "written by ", who(n.author, n.agent_did, "author"), " · ", time(n.at_ms ?? n.timestamp)),
    rendered(n.html, n.text, "note-text body md"), facts(n, shownKeys),
    el("details", { class: "fold ids" }, el("summary", { text: "ids" }), facts({ note: n.container_did, written_by: n.agent_did })),
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
  async (v) => {
    clear(searchResult, table(await get("/api/search", { q: v.q }), [
      { key: "kind" }, { key: "timestamp", label: "when", time: true }, { key: "text", max: 300 },
    ], { empty: "nothing found" }));
    return false;
  }), searchResult);

function kindPanel(body, kind, fields, toBody) {
  const rows = el("div", { class: `${kind}-list` });
  body.append(form(fields, "Add", async (v) => { await post(`/api/${kind}`, toBody(v)); await loadKind(kind, rows); }), rows);
  return () => loadKind(kind, rows);
}

/** A diary entry as a dated paragraph: its day and time, who wrote it, its title, its Markdown. */
function diaryEntry(d) {
  return el("article", { class: "diary-entry", data: { did: d.container_did } },
    el("h3", {}, day(d.at_ms), d.title ? ` — ${d.title}` : ""),
    el("p", { class: "meta muted" }, "by ", who(d.author, d.author_did, "author"),
      (d.tags || []).length ? ` · ${d.tags.join(", ")}` : "", d.forks ? ` · ${d.forks} versions apart` : ""),
    rendered(d.html, d.text, "entry md"));
}

const KIND_COLUMNS = {
  concepts: [{ key: "name", label: "concept", render: (c) => c.name || c.label || "" },
    { key: "html", label: "description", render: (c) => rendered(c.html, c.description, "md") },
    { key: "aliases", render: (c) => (c.aliases || []).join(", ") }, { key: "author", label: "by", render: (c) => who(c.author, c.author_did) },
    { key: "at_ms", label: "when" }],
  links: [{ key: "from_name", label: "from", render: (l) => who(l.from_name || "a concept", l.from_did) },
    { key: "relation_type", label: "relation", render: (l) => l.relation_type || l.relation || "" },
    { key: "to_name", label: "to", render: (l) => who(l.to_name || "a concept", l.to_did) },
    { key: "author", label: "by", render: (l) => who(l.author, l.author_did) }, { key: "at_ms", label: "when" }],
};

async function loadKind(kind, box) {
  const rows = await get(`/api/${kind}`, { limit: 50 });
  if (kind === "diary") clear(box, rows.length ? rows.map(diaryEntry) : el("p", { class: "empty", text: "no diary entries yet" }));
  else clear(box, table(rows, KIND_COLUMNS[kind], { empty: `no ${kind}` }));
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
const reloadKinds = debounce(() => Promise.all(loaders.map((load) => load())));
stream(["note"], () => { reload(); reloadKinds(); });
act(() => loadNotes());
for (const load of loaders) act(load);
