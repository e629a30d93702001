// Small DOM helpers shared by the pages. Everything that came from notes, the LLM or peers is
// set with textContent (never innerHTML), and styling is by class only (the CSP forbids inline styles).
import { get } from "./api.js";

/** el("div", {class: "x", text: "hi", title, data: {did}, attrs: {type}, on: {click}}, ...children) */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = String(value);
    else if (key === "data") for (const [k, v] of Object.entries(value)) node.dataset[k] = String(v);
    else if (key === "attrs") for (const [k, v] of Object.entries(value)) { if (v !== false && v !== null && v !== undefined) node.setAttribute(k, v === true ? "" : String(v)); }
    else if (key === "on") for (const [k, v] of Object.entries(value)) node.addEventListener(k, v);
    else if (/html/i.test(key)) throw new Error(`el(): ${key} is not allowed; text goes in with textContent`);
    else node[key] = value;
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

/** A time in the browser's zone, the UTC value in its title. */
export function time(ms) {
  if (ms === null || ms === undefined || ms === "") return el("span", { class: "muted", text: "-" });
  if (typeof ms === "object") return el("span", { text: text(ms) });
  const d = new Date(typeof ms === "string" && !/^\d+$/.test(ms) ? Date.parse(ms) : Number(ms));  // ms or RFC 3339
  if (Number.isNaN(d.getTime())) return el("span", { text: String(ms) });
  return el("time", { text: d.toLocaleString(), title: d.toISOString(), attrs: { datetime: d.toISOString() } });
}

/** A value as short readable text (objects as JSON). */
export function text(value, max = 300) {
  if (value === null || value === undefined) return "";
  let s = typeof value === "string" ? value : JSON.stringify(value);
  if (s === undefined) s = String(value);
  return s.length > max ? s.slice(0, max) + "…" : s;
}

export function pre(value, cls = "") {
  const s = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  return el("pre", { class: cls, text: s ?? "" });
}

function cellFor(row, col) {
  if (col.render) return col.render(row);
  const v = row[col.key];
  if (col.key.endsWith("_ms") || col.time) return time(v);
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (v !== null && typeof v === "object") return fold(v);  // never raw JSON in a cell
  return text(v, col.max || 200);
}

/** A table of rows; columns: [{key, label, render(row) -> Node|string, time, max}] (default: the first row's keys). */
export function table(rows, columns = null, { empty = "nothing yet", rowClass = null, rowData = null } = {}) {
  if (!rows || rows.length === 0) return el("p", { class: "empty", text: empty });
  const cols = columns || Object.keys(rows[0]).map((key) => ({ key, label: key }));
  return el("table", { class: "rows" },
    el("thead", {}, el("tr", {}, cols.map((c) => (c.label ?? c.key)
      ? el("th", { text: c.label ?? c.key })
      : el("th", {}, el("span", { class: "visually-hidden", text: "actions" }))))),  // a buttons column: named for screen readers
    el("tbody", {}, rows.map((row) => el("tr", { class: rowClass ? rowClass(row) : null, data: rowData ? rowData(row) : null },
      cols.map((c) => el("td", {}, cellFor(row, c)))))));
}

/** A value folded away: its fields in words when opened (a list: its items, one a line). */
export function fold(value, label = null) {
  const isList = Array.isArray(value);
  const n = isList ? value.length : Object.keys(value || {}).length;
  if (!n) return el("span", { class: "muted", text: "none" });
  if (isList && value.every((v) => typeof v !== "object" || v === null)) return value.join(", ");
  const inner = isList ? el("ol", {}, value.map((v) => el("li", {}, typeof v === "object" && v !== null ? facts(v) : String(v))))
    : facts(value);
  return el("details", { class: "fold" }, el("summary", { text: label || `${n} ${isList ? (n === 1 ? "item" : "items") : (n === 1 ? "field" : "fields")}` }), inner);
}

/** A definition list of an object's keys (nested values folded away). */
export function facts(obj, keys = null) {
  const dl = el("dl", { class: "facts" });
  for (const key of keys || Object.keys(obj || {})) {
    const v = obj[key];
    dl.append(el("dt", { text: key.replace(/_ms$/, "").replace(/_/g, " ") }), el("dd", {}, v !== null && typeof v === "object" ? fold(v)
      : key.endsWith("_ms") ? time(v) : typeof v === "boolean" ? (v ? "yes" : "no") : text(v, 600)));
  }
  return dl;
}

/** The error banner at the top of the page (one; a new message replaces the last). */
export function showError(message) {
  let banner = document.getElementById("error-banner");
  if (!banner) {
    banner = document.createElement("div");
    banner.id = "error-banner";
    banner.className = "error-banner";
    banner.setAttribute("role", "alert");
    const close = document.createElement("button");
    close.type = "button";
    close.textContent = "×";
    close.title = "dismiss";
    close.addEventListener("click", () => banner.remove());
    banner.append(document.createElement("span"), close);
    document.body.prepend(banner);
  }
  banner.firstChild.textContent = String(message);
}

/** Run an action; an error goes to the banner and is returned as false. */
export async function act(fn) {
  try {
    return await fn();
  } catch (err) {
    showError(err && err.reason ? `${err.code}: ${err.reason}` : String(err && err.message ? err.message : err));
    return false;
  }
}

export function button(label, onClick, { cls = "", title = null, data = null } = {}) {
  const b = el("button", { type: "button", class: cls, text: label, title, data });
  b.addEventListener("click", async () => {
    b.disabled = true;
    try { await act(onClick); } finally { b.disabled = false; }
  });
  return b;
}

/** A <section> with a heading; returns [section, body]. */
export function section(title, id, ...tools) {
  const body = el("div", { class: "body" });
  const sec = el("section", { id, class: "panel" }, el("div", { class: "panel-head" }, el("h2", { text: title }), ...tools), body);
  return [sec, body];
}

/** A small form: fields [{name, label, type: "text"|"textarea"|"number"|"checkbox"|"select", options, required}]. */
export function form(fields, submitLabel, onSubmit, { cls = "" } = {}) {
  const f = el("form", { class: `inline-form ${cls}` });
  const inputs = {};
  for (const field of fields) {
    let input;
    if (field.type === "textarea") input = el("textarea", { name: field.name, rows: field.rows || 3 });
    else if (field.type === "select") input = el("select", { name: field.name }, (field.options || []).map(([v, l]) => el("option", { value: v, text: l })));
    else input = el("input", { name: field.name, type: field.type || "text", attrs: { step: field.step } });
    if (field.required) input.required = true;
    if (field.placeholder) input.placeholder = field.placeholder;
    inputs[field.name] = input;
    f.append(el("label", { class: field.type === "checkbox" ? "check" : "" }, el("span", { text: field.label || field.name }), input));
  }
  f.append(el("button", { type: "submit", text: submitLabel }));
  f.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = {};
    for (const [name, input] of Object.entries(inputs)) {
      if (input.type === "checkbox") values[name] = input.checked;
      else if (input.type === "number") { if (input.value !== "") values[name] = Number(input.value); }
      else if (input.value !== "") values[name] = input.value;
    }
    const submit = f.querySelector("button[type=submit]");
    submit.disabled = true;
    try {
      if ((await act(() => onSubmit(values))) !== false) f.reset();
    } finally { submit.disabled = false; }
  });
  f.inputs = inputs;
  return f;
}

/** The "older" button under a paged list: ``offer(full, loadOlder)`` after each page shows it while
 * the page came back full, a click loading the page before it. */
export function olderButton(label = "older") {
  const b = el("button", { type: "button", text: label, hidden: true });
  b.offer = (full, loadOlder) => { b.hidden = !full; b.onclick = () => act(loadOlder); };
  return b;
}

/** Nodes kept across live reloads, by key: a form or an editor the person is typing in must survive
 * the redraw an event causes. ``keep(key, make)`` makes one the first time; ``forget(key)`` drops it. */
export function keeper() {
  const nodes = new Map();
  return {
    keep(key, make) { if (!nodes.has(key)) nodes.set(key, make()); return nodes.get(key); },
    forget(key) { nodes.delete(key); },
  };
}

/** "a, b" -> ["a", "b"] */
export function list(value) {
  return String(value || "").split(",").map((s) => s.trim()).filter(Boolean);
}

/** Call fn at most once per animation-free tick burst: several events in a row give one reload. */
export function debounce(fn, ms = 150) {
  let timer = null;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => act(() => fn(...args)), ms); };
}

/** A long id (DID, key) shortened to its end, whole in the title. */
export function shortId(value, keep = 12) {
  const s = value === null || value === undefined ? "" : String(value);
  return el("code", { class: "id", text: s.length > keep + 1 ? `…${s.slice(-keep)}` : s, title: s });
}

let routeTable = null;
/** The choices the API declares for an argument (GET /api, read once): the pages never copy them. */
export async function choices(method, path, arg) {
  if (!routeTable) routeTable = get("/api");
  const route = (await routeTable).find((r) => r.method === method && r.path === path);
  return (route && route.args[arg] && route.args[arg].choices) || [];
}
