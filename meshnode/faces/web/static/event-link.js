// The one connection of a browser to GET /api/events (protocols/web.md 5.3). It runs in the
// SharedWorker (events-worker.js) or, without one, in the leader tab (event-hub.js).
//
// It reads the stream with fetch rather than EventSource: an EventSource sees neither the status of
// a refusal (503 too_many_streams, Retry-After) nor a 401, and retries on its own timer. Here every
// outcome becomes a status message and the retry waits FIRST_DELAY_S doubling to MAX_DELAY_S, with
// jitter, or the server's Retry-After when longer. A reconnect sends the last event id
// (Last-Event-ID): the server resumes with what was missed, or sends `resync`.
//
// Messages given to `emit`: {kind: "event", type, data, id} and
// {kind: "status", state, reason, retryAt, reconnected}, where state is "connecting", "open", "down"
// (the node does not answer, or the stream ended), "refused" (the server's max_streams) or
// "unauthorized" (no session: the pages go to /login); retryAt is the epoch ms of the next try.

export const FIRST_DELAY_S = 1;
export const MAX_DELAY_S = 30;
const SILENCE_MS = 45_000; // the server pings every 15 s: this long without a byte is a dead connection
const STEADY_MS = 5_000;   // a stream open this long counts as a success: the backoff starts over

/** Seconds before retry number `attempt` (0, 1, ...): 1, 2, 4 ... 30, each times 0.8-1.2. */
export function backoff(attempt, random = Math.random) {
  const base = Math.min(MAX_DELAY_S, FIRST_DELAY_S * 2 ** Math.min(attempt, 10));
  return Math.min(MAX_DELAY_S, base * (0.8 + 0.4 * random()));
}

export class EventLink {
  /** `via`: who holds this stream, "shared" (the SharedWorker), "leader" (the leader tab) or "local"
   * (this tab alone); the server keeps one shared or leader stream per browser session and ends an
   * older one with `replaced` (a worker gone with its page, whose request lingered). */
  constructor(emit, via = "local") {
    this.emit = emit;
    this.via = via;
    this.types = new Set();
    this.cursor = null;        // the last event id seen: sent back as Last-Event-ID
    this.attempt = 0;
    this.running = false;
    this.everOpen = false;
    this.controller = null;
    this.timer = null;
    this.current = { kind: "status", state: "connecting", reason: "", retryAt: null };
  }

  status() {
    return { ...this.current, reconnected: false };
  }

  /** Adds event types; a stream already open is reopened (resumed at its cursor) when they are new. */
  want(types) {
    let grew = false;
    for (const type of types) {
      if (type === "resync" || this.types.has(type)) continue;
      this.types.add(type);
      grew = true;
    }
    if (grew && this.running) this.soon();
  }

  start() {
    if (this.running) return;
    this.running = true;
    this.soon();
  }

  stop() {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = null;
    this.controller?.abort("stopped");
    this.controller = null;
  }

  /** The person's "retry now", or a hint that the node may be back: try at once unless open. */
  retryNow() {
    if (!this.running || this.current.state === "open") return;
    this.attempt = 0;
    this.soon();
  }

  // Several want() calls in a row (the top bar's types, then the page's) open one stream.
  soon() {
    clearTimeout(this.timer);
    this.controller?.abort("replaced");
    this.controller = null;
    this.timer = setTimeout(() => this.connect(), 0);
  }

  setStatus(state, reason = "", retryAt = null, reconnected = false) {
    this.current = { kind: "status", state, reason, retryAt };
    this.emit({ ...this.current, reconnected });
  }

  retryLater(state, reason, retryAfterS = 0) {
    if (!this.running) return;
    const delay = Math.max(backoff(this.attempt), Number.isFinite(retryAfterS) ? retryAfterS : 0);
    this.attempt += 1;
    const retryAt = Date.now() + delay * 1000;
    this.setStatus(state, reason, retryAt);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay * 1000);
  }

  async connect() {
    this.timer = null;
    if (!this.running) return;
    const controller = new AbortController();
    this.controller = controller;
    // seq: which of this browser's requests is the newest, however they reach the node
    const seq = Date.now() * 100 + (this.serial = ((this.serial ?? 0) + 1) % 100);
    const query = `?via=${this.via}&seq=${seq}` + (this.types.size ? `&types=${[...this.types].sort().join(",")}` : "");
    const headers = { Accept: "text/event-stream" };
    if (this.cursor) headers["Last-Event-ID"] = this.cursor;
    let response;
    try {
      response = await fetch(`/api/events${query}`, { credentials: "same-origin", cache: "no-store", headers,
        signal: controller.signal });
    } catch (err) {
      if (controller !== this.controller) return; // replaced or stopped meanwhile
      return this.retryLater("down", "the node does not answer (stopped?)");
    }
    if (controller !== this.controller) return;
    if (response.status === 401) {
      this.running = false;
      return this.setStatus("unauthorized", "the session ended: log in again");
    }
    if (!response.ok || !response.body) {
      let body = null;
      try {
        body = await response.json();
      } catch (err) { /* not the node's JSON: a proxy's page */ }
      const retryAfter = Number.parseFloat(response.headers.get("Retry-After") ?? "");
      const refused = body?.code === "too_many_streams";
      return this.retryLater(refused ? "refused" : "down", body?.reason ?? `the node answered HTTP ${response.status}`,
        retryAfter);
    }
    const opened = Date.now();
    this.setStatus("open", "", null, this.everOpen);
    this.everOpen = true;
    let ended = "the stream ended (the node stopped?)";
    try {
      await this.read(response.body, controller);
    } catch (err) {
      if (controller.signal.reason === "silence") ended = "the node went silent";
      else if (controller !== this.controller) return; // replaced or stopped: not an outage
    }
    if (controller !== this.controller || !this.running) return;  // replaced by a newer stream: not an outage
    this.controller = null;
    if (Date.now() - opened >= STEADY_MS) this.attempt = 0;
    this.retryLater("down", ended);
  }

  async read(body, controller) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let event = { type: "message", data: [], id: null };
    let silence = setTimeout(() => controller.abort("silence"), SILENCE_MS);
    const onAbort = () => reader.cancel().catch(() => {});
    controller.signal.addEventListener("abort", onAbort);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        clearTimeout(silence);
        silence = setTimeout(() => controller.abort("silence"), SILENCE_MS);
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.search(/\r\n|\r|\n/)) >= 0) {
          const line = buffer.slice(0, cut);
          buffer = buffer.slice(cut + (buffer.startsWith("\r\n", cut) ? 2 : 1));
          if (line === "") {
            this.deliver(event, controller);
            event = { type: "message", data: [], id: null };
          } else if (!line.startsWith(":")) {
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            let value = colon < 0 ? "" : line.slice(colon + 1);
            if (value.startsWith(" ")) value = value.slice(1);
            if (field === "event") event.type = value;
            else if (field === "data") event.data.push(value);
            else if (field === "id" && !value.includes("\0")) event.id = value;
          }
        }
      }
    } finally {
      clearTimeout(silence);
      controller.signal.removeEventListener("abort", onAbort);
      if (controller.signal.aborted) throw new Error(String(controller.signal.reason));
    }
  }

  deliver(event, controller) {
    if (event.type === "replaced") { // this browser's newer stream took over: this link ends, quietly
      if (controller === this.controller) this.running = false; // (not when this link itself reopened)
      return;
    }
    if (event.id !== null) this.cursor = event.id;
    if (!event.data.length) return;
    let data;
    try {
      data = JSON.parse(event.data.join("\n"));
    } catch (err) {
      return;
    }
    this.emit({ kind: "event", type: event.type, data, id: event.id });
  }
}
