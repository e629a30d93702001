// How a tab reaches the browser's one event stream (protocols/web.md 5.3), in this order:
// - "shared": the SharedWorker events-worker.js holds the stream; this tab talks to it over its port;
// - "leader"/"follower" (no SharedWorker, e.g. Chrome on Android): the tab holding the Web Lock
//   LOCK holds the stream (event-link.js) and relays it over the BroadcastChannel CHANNEL; the others
//   send it their types; when the leader goes, the next tab in the lock's queue takes over at the
//   last event id it saw;
// - "local": neither API: this tab holds its own stream.
// `connectEvents(receive)` returns {mode, want(types), retry()}; `receive` gets the link's messages.
import { EventLink } from "./event-link.js";

const LOCK = "meshnode-events-leader";
const CHANNEL = "meshnode-events";

function shared(receive, failed) {
  const worker = new SharedWorker("/static/events-worker.js", { type: "module", name: "meshnode-events" });
  worker.addEventListener("error", (event) => {
    console.warn("the event stream's SharedWorker failed:", event.message ?? event);
    failed();
  });
  const port = worker.port;
  const wanted = new Set();
  port.addEventListener("message", (event) => receive(event.data));
  port.start();
  addEventListener("pagehide", () => port.postMessage({ kind: "bye" }));
  addEventListener("pageshow", (event) => { if (event.persisted) port.postMessage({ kind: "want", types: [...wanted] }); });
  return {
    mode: "shared",
    want(types) {
      for (const type of types) wanted.add(type);
      port.postMessage({ kind: "want", types: [...wanted] });
    },
    retry: () => port.postMessage({ kind: "retry" }),
  };
}

function elected(receive) {
  const channel = new BroadcastChannel(CHANNEL);
  const wanted = new Set();
  const hub = { mode: "follower", link: null, cursor: null };
  channel.addEventListener("message", (event) => {
    const message = event.data;
    if (!message || typeof message !== "object") return;
    if (hub.link !== null) { // the leader hears the followers
      if (message.kind === "want" && Array.isArray(message.types)) {
        hub.link.want(message.types.filter((t) => typeof t === "string" && t.length <= 40));
        channel.postMessage(hub.link.status());
      } else if (message.kind === "retry") hub.link.retryNow();
      return;
    }
    if (message.kind === "leader") channel.postMessage({ kind: "want", types: [...wanted] });
    else if (message.kind === "event" || message.kind === "status") {
      if (message.kind === "event" && message.id) hub.cursor = message.id;
      receive(message);
    }
  });
  navigator.locks.request(LOCK, () => {
    hub.mode = "leader";
    hub.link = new EventLink((message) => {
      receive(message);
      channel.postMessage(message);
    }, "leader");
    hub.link.cursor = hub.cursor;
    hub.link.want(wanted);
    hub.link.start();
    channel.postMessage({ kind: "leader" });
    return new Promise(() => {}); // held while this tab lives
  });
  return {
    get mode() { return hub.mode; },
    want(types) {
      for (const type of types) wanted.add(type);
      if (hub.link !== null) hub.link.want(types);
      else channel.postMessage({ kind: "want", types: [...wanted] });
    },
    retry() {
      if (hub.link !== null) hub.link.retryNow();
      else channel.postMessage({ kind: "retry" });
    },
  };
}

function local(receive) {
  const link = new EventLink(receive);
  return {
    mode: "local",
    want(types) {
      link.want(types);
      link.start();
    },
    retry: () => link.retryNow(),
  };
}

export function connectEvents(receive) {
  const wanted = new Set();
  const facade = {
    impl: null,
    get mode() { return this.impl.mode; },
    want(types) {
      for (const type of types) wanted.add(type);
      this.impl.want(types);
    },
    retry() { this.impl.retry(); },
  };
  const fallback = () => (navigator.locks && typeof BroadcastChannel === "function" ? elected : local)(receive);
  if (typeof SharedWorker === "function") {
    try {
      facade.impl = shared(receive, () => { // the worker failed to load: this tab goes on without it
        facade.impl = fallback();
        facade.impl.want([...wanted]);
      });
      return facade;
    } catch (err) {
      console.warn("no SharedWorker for the event stream:", err);
    }
  }
  facade.impl = fallback();
  return facade;
}
