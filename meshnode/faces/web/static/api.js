// The pages' one way to the node: JSON calls and the event stream (protocols/web.md 4, 5).
// get/post resolve to the result of {"ok": true, "result": ...} and throw ApiError otherwise;
// a 401 (no or expired session) sends the browser to /login.

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
    throw new ApiError("unreachable", "the node does not answer (stopped?)", 0);
  }
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

// One EventSource per tab, shared by every stream() call; a "resync" event (the feed lost track)
// reaches every subscriber, which reloads what it shows.
let source = null;
const subscribers = new Map(); // type -> Set of callbacks

function dispatch(type, event) {
  let data = {};
  try {
    data = event.data ? JSON.parse(event.data) : {};
  } catch (err) {
    return;
  }
  const targets = type === "resync" ? [...subscribers.values()].flatMap((set) => [...set]) : [...(subscribers.get(type) ?? [])];
  for (const callback of new Set(targets)) {
    try {
      callback(type, data);
    } catch (err) {
      console.error(err);
    }
  }
}

export function stream(types, onEvent) {
  if (source === null) {
    source = new EventSource("/api/events");
    source.addEventListener("resync", (event) => dispatch("resync", event));
  }
  for (const type of types) {
    if (!subscribers.has(type)) {
      subscribers.set(type, new Set());
      if (type !== "resync") source.addEventListener(type, (event) => dispatch(type, event));
    }
    subscribers.get(type).add(onEvent);
  }
  return source;
}
