// The header every page shows: node name, the agent's mode (paused, idle), connected peers, links.
// Kept current by the feed's `mode` and `peer` events.
import { get, post, stream, onConnection, connection, retryNow } from "./api.js";
import { el, clear, act } from "./ui.js";
import { mountInboxCount } from "./inbox-count.js";

export const PAGES = [
  ["/", "Conversation", "conversation"],
  ["/inbox", "Inbox", "inbox"],
  ["/mind", "Mind", "mind"],
  ["/goals", "Goals", "goals"],
  ["/review", "Review", "review"],
  ["/mesh", "Mesh", "mesh"],
  ["/knowledge", "Knowledge", "knowledge"],
  ["/reactor", "Reactor", "reactor"],
];

const state = { mode: "?", paused: false, idle: false, ticks: null, peers: new Set(), listeners: [] };

/** Called with {mode, paused, idle, ticks} whenever the header learns something new. */
export function onMode(fn) {
  state.listeners.push(fn);
}

export function modeState() {
  return { mode: state.mode, paused: state.paused, idle: state.idle, ticks: state.ticks };
}

// While the node is out of reach, what the header last heard may no longer be true: it says so.
function stale() {
  return connection().state === "down";
}

function paint(parts) {
  const unknown = stale();
  parts.mode.textContent = unknown ? `${state.mode}?` : state.mode;
  parts.mode.title = unknown ? "the agent's mode when the node last answered" : "the agent's mode";
  parts.mode.dataset.mode = state.mode;
  parts.mode.classList.toggle("stale", unknown);
  parts.paused.hidden = !state.paused;
  parts.idle.hidden = !state.idle;
  parts.peers.textContent = unknown ? "peers unknown"
    : `${state.peers.size} peer${state.peers.size === 1 ? "" : "s"} connected`;
  for (const fn of state.listeners) fn(modeState());
}

function setMode(c) {
  if (!c) return;
  if (c.mode !== undefined) state.mode = c.mode;
  if (c.paused !== undefined) state.paused = Boolean(c.paused);
  if (c.idle !== undefined) state.idle = Boolean(c.idle);
  if (c.ticks !== undefined) state.ticks = c.ticks;
}

export function renderNav(active) {
  const nav = document.getElementById("nav") || document.body.prepend(el("nav", { id: "nav" })) || document.getElementById("nav");
  const parts = {
    name: el("strong", { class: "node-name", text: "meshnode" }),
    mode: el("span", { class: "mode badge", title: "the agent's mode", text: "?" }),
    paused: el("span", { class: "paused badge warn", text: "paused", hidden: true }),
    idle: el("span", { class: "idle badge", text: "idle", hidden: true }),
    peers: el("span", { class: "peers", text: "" }),
  };
  const links = el("ul", { class: "links" }, PAGES.map(([href, label, key]) =>
    el("li", {}, el("a", { href, text: label, class: key === active ? "active" : "", attrs: { "aria-current": key === active ? "page" : null } }))));
  const logout = el("button", { type: "button", class: "link-button", text: "log out", on: { click: () => act(async () => { await post("/api/logout"); location.href = "/login"; }) } });
  const link = linkState(() => paint(parts));
  clear(nav, el("div", { class: "node" }, parts.name, parts.mode, parts.paused, parts.idle, parts.peers, link), links, logout);
  mountInboxCount(nav);
  // A snapshot answered after a newer `mode` event must not undo it: `events` counts them.
  let events = 0;
  const refresh = () => act(async () => {
    const seen = events;
    const status = await get("/api/status");
    parts.name.textContent = status.name || "meshnode";
    parts.name.title = status.did || "";
    document.title = `${document.title.split(" · ")[0]} · ${status.name || "meshnode"}`;
    if (seen === events) setMode(status.cognition || { mode: "off" });
    state.peers = new Set(status.connected || []);
    paint(parts);
  });
  refresh();
  const source = stream(["mode", "peer"], (type, data) => {
    if (type === "mode") {
      events += 1;
      setMode(data);
    } else if (type === "peer") return refresh();  // the event names a DID, the status lists peer ids
    paint(parts);
  });
  // The feed reports changes from the moment a stream opens: what changed before (or while it was
  // reconnecting) comes from a fresh snapshot.
  source.addEventListener("open", () => refresh());
  return nav;
}

const SAY = {
  down: "disconnected: the node does not answer",
  refused: "live updates refused: too many event streams open",
  unauthorized: "logged out",
};

/** The connection's state in the header: said (aria-live) when it changes, with a countdown to the
 * next try and a "retry now" button while the node is out of reach; nothing while all is well. */
function linkState(onChange) {
  const said = el("span", { class: "said", attrs: { role: "status", "aria-live": "polite" } });
  const countdown = el("span", { class: "countdown", attrs: { "aria-hidden": "true" } });
  const retry = el("button", { type: "button", class: "retry", text: "retry now", hidden: true, on: { click: () => retryNow() } });
  const box = el("span", { class: "link-state" }, said, countdown, retry);
  let shown = null;
  let ticker = null;
  let last = null;
  const tick = () => {
    const left = last?.retryAt ? Math.max(0, Math.ceil((last.retryAt - Date.now()) / 1000)) : null;
    countdown.textContent = left === null ? "" : left > 0 ? ` · retrying in ${left} s` : " · retrying now";
  };
  onConnection((c) => {
    last = c;
    box.dataset.state = c.state;
    const words = SAY[c.state] ?? "";
    if (words !== shown) said.textContent = shown = words; // a change is announced, the countdown is not
    box.title = c.reason || "";
    retry.hidden = !["down", "refused"].includes(c.state);
    tick();
    clearInterval(ticker);
    ticker = c.retryAt ? setInterval(tick, 1000) : null;
    onChange();
  });
  return box;
}
