// What the pages made for reading share (issue 34): Markdown the server rendered and sanitized
// (faces/web/markdown.py: the `html` fields), a name with its DID on hover, and the names of the
// DIDs this node knows (itself as "the agent", its peers by the names they gave).
import { get } from "./api.js";
import { el, fold, text, time } from "./ui.js";

/** Server-rendered, sanitized Markdown (an `html` field) in a div; the plain text when there is none. */
export function rendered(html, plain = "", cls = "md") {
  const box = el("div", { class: cls });
  if (html) box.innerHTML = html;  // sanitized on the server by nh3 (a short list of tags, no styles, no scripts)
  else box.textContent = plain || "";
  return box;
}

/** A name, the DID (or key) it stands for in its title: the DID shows on hover. */
export function who(name, did = null, cls = "who") {
  return el("span", { class: cls, text: name || "someone", title: did || null, data: did ? { did } : null });
}

let known = null;
/** DID -> name: this node as "the agent", every other agent by what the person reads everywhere
 * (GET /api/names: the petname, else the name it announced, else its short id); read once a page. */
export async function names() {
  if (!known) {
    known = get("/api/names").catch(() => []).then((rows) =>
      new Map((rows || []).map((n) => [n.did, n.own ? "the agent" : n.name])));
  }
  return known;
}

/** Read the names again at the next names() (a petname was set or forgotten). */
export function forgetNames() {
  known = null;
}

/** The name of a DID (its end when unknown), with the DID on hover. */
export function named(map, did) {
  if (!did) return el("span", { class: "muted", text: "-" });
  return who(map.get(did) || `…${String(did).slice(-8)}`, did);
}

/** A diary's heading time: the day in words and the hour, in the reader's zone ("Monday 7 December 2026, 11:17"). */
export function day(ms) {
  const d = new Date(Number(ms));
  if (ms === null || ms === undefined || Number.isNaN(d.getTime())) return el("span", { class: "muted", text: "undated" });
  const words = `${d.toLocaleDateString(undefined, { weekday: "long", year: "numeric", month: "long", day: "numeric" })}, `
    + d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
  return el("time", { text: words, title: d.toISOString(), attrs: { datetime: d.toISOString() } });
}

const DID = /^did:(key|hmp):/;

/** Table columns for rows of any shape, read as words: a DID as its name (the DID on hover), a time
 * in the reader's zone, a nested value folded away, never raw JSON. */
export function columnsOf(rows, known, skip = []) {
  if (!rows || !rows.length) return null;
  return Object.keys(rows[0]).filter((k) => !skip.includes(k)).map((key) => ({
    key, label: key.replace(/_/g, " "),
    render: (r) => {
      const v = r[key];
      if (typeof v === "string" && DID.test(v)) return named(known, v);
      if (key.endsWith("_ms")) return time(v);
      if (typeof v === "boolean") return v ? "yes" : "no";
      if (v !== null && typeof v === "object") return fold(v);
      return text(v, 300);
    },
  }));
}
