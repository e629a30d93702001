// The SharedWorker every tab of a browser shares (protocols/web.md 5.3): it holds the one event
// stream (event-link.js) and hands each tab, through its port, the events of the types that tab asked
// for, `resync` and every status change. A tab sends {kind: "want", types}, {kind: "retry"} (the
// person's "retry now", or an API call that found the node gone) and {kind: "bye"} when it goes away;
// with no tab left the stream closes. Loaded as a module worker from 'self' (script-src 'self').
import { EventLink } from "./event-link.js";

const ports = new Map(); // MessagePort -> Set of the event types its tab wants

const link = new EventLink((message) => {
  for (const [port, types] of ports) {
    if (message.kind === "event" && message.type !== "resync" && !types.has(message.type)) continue;
    port.postMessage(message);
  }
}, "shared");

function heard(port, message) {
  if (!message || typeof message !== "object") return;
  if (message.kind === "want" && Array.isArray(message.types)) {
    const types = ports.get(port) ?? new Set();
    for (const type of message.types) if (typeof type === "string" && type.length <= 40) types.add(type);
    ports.set(port, types);
    link.want(types);
    link.start();
    port.postMessage(link.status());
  } else if (message.kind === "retry") {
    link.retryNow();
  } else if (message.kind === "bye") {
    ports.delete(port);
    if (ports.size === 0) link.stop();
  }
}

self.addEventListener("connect", (event) => {
  const port = event.ports[0];
  ports.set(port, new Set());
  port.addEventListener("message", (e) => heard(port, e.data));
  port.start();
});
