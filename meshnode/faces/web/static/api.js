// The pages' one way to the node: JSON calls and the event stream (protocols/web.md 4, 5).
// get/post resolve to the result of {"ok": true, "result": ...} and throw ApiError otherwise;
// a 401 (no or expired session) sends the browser to /login.
import { connectEvents } from "./event-hub.js";

export class ApiError extends Error {
  constructor(code, reason, status) {
    super(`${code}: ${reason}`);
    this.name = "ApiError";
    this.code = code;
    this.reason = reason;
    this.status = status;
  }
}

async function answer(response) {
  if (response.status === 401 && location.pathname !== "/login") {
    location.assign("/login");
  }
  let body;
  try {
    body = await response.json();
  } catch (err) {
    throw new ApiError("bad_response", `the node answered ${response.status} without JSON`, response.status);
  }
  if (!body || body.ok !== true) {
    throw new ApiError(body?.code ?? "error", body?.reason ?? `HTTP ${response.status}`, response.status);
  }
  return body.result;
}

async function send(path, init) {
  let response;
  try {
    response = await fetch(path, { credentials: "same-origin", ...init });
  } catch (err) {
    nodeGone("the node does not answer (stopped?)");
    throw new ApiError("unreachable", "the node does not answer (stopped?)", 0);
  }
  nodeAnswered();
  return answer(response);
}

export function get(path, params = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === "") continue;
    url.searchParams.set(key, Array.isArray(value) ? value.join(",") : String(value));
  }
  return send(url.pathname + url.search, { headers: { Accept: "application/json" } });
}

export function post(path, body = {}) {
  return send(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(body),
  });
}

// The browser's one event stream, shared by every tab (event-hub.js) and by every stream() call of
// this page. A "resync" event (the feed lost track) reaches every subscriber, which reloads what it
// shows; so does a reconnect after the stream was down. connection() is what the page knows of its
// node: "connecting", "open", "down", "refused" or "unauthorized", with a reason and the time of the
// next try (retryAt); an API call the node did not answer makes it "down" until something answers.
let hub = null;
const subscribers = new Map(); // type -> Set of callbacks
const opened = new EventTarget(); // "open" each time the stream (re)opens: pages refresh their snapshot
const watchers = new Set();
let linkStatus = { state: "connecting", reason: "", retryAt: null };
let apiDown = null; // the reason an API call found no node, until one answers again
let caughtUp = null; // false while this tab waits for the stream's first open: what it loaded meanwhile may miss events

export function connection() {
  if (apiDown !== null && linkStatus.state === "open") return { state: "down", reason: apiDown, retryAt: null };
  return { state: linkStatus.state, reason: linkStatus.reason, retryAt: linkStatus.retryAt };
}

/** Calls fn(connection()) now and at each change. */
export function onConnection(fn) {
  watchers.add(fn);
  fn(connection());
}

function changed() {
  const now = connection();
  for (const fn of watchers) {
    try {
      fn(now);
    } catch (err) {
      console.error(err);
    }
  }
}

/** Try the stream again now (the person's "retry now"). */
export function retryNow() {
  hub?.retry();
}

function nodeGone(reason) {
  if (apiDown === null) {
    apiDown = reason;
    changed();
  }
  hub?.retry();
}

function nodeAnswered() {
  if (apiDown !== null) {
    apiDown = null;
    changed();
  }
}

function deliver(type, data) {
  const targets = type === "resync" ? [...subscribers.values()].flatMap((set) => [...set]) : [...(subscribers.get(type) ?? [])];
  for (const callback of new Set(targets)) {
    try {
      callback(type, data);
    } catch (err) {
      console.error(err);
    }
  }
}

function heard(message) {
  if (message?.kind === "event") {
    deliver(message.type, message.data);
  } else if (message?.kind === "status") {
    linkStatus = { state: message.state, reason: message.reason ?? "", retryAt: message.retryAt ?? null };
    if (message.state === "open") apiDown = null;
    changed();
    if (message.state === "unauthorized" && location.pathname !== "/login") location.assign("/login");
    // a stream already open when this tab joined has every event after what the tab then loads; one
    // that opened later may miss what changed in between, and so may a stream that was down
    const behind = caughtUp === false || message.reconnected;
    if (caughtUp === null) caughtUp = message.state === "open";
    if (message.state === "open") {
      caughtUp = true;
      if (behind) deliver("resync", { reason: "the stream opened after this page loaded: reload" });
      opened.dispatchEvent(new Event("open"));
    }
  }
}

/** onEvent(type, data) for each event of `types` (and every resync). The returned target fires "open"
 * each time the stream (re)opens. */
export function stream(types, onEvent) {
  if (hub === null) hub = connectEvents(heard);
  for (const type of types) {
    if (!subscribers.has(type)) subscribers.set(type, new Set());
    subscribers.get(type).add(onEvent);
  }
  hub.want(types.filter((type) => type !== "resync"));
  return opened;
}
