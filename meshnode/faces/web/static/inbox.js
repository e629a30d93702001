// Inbox (/inbox): everything waiting for the person, newest first: the agent's confirmation
// requests, unknown parties' held A2A messages, commands the validators held, the agent's drafts and
// the reactor's escalations; each decided in place (POST /api/inbox/decide, through the action of its
// kind), the held A2A messages also all at once (POST /api/a2a/reject). Live by the feed's `inbox` events.
import { get, post, stream } from "./api.js";
import { renderNav } from "./nav.js";
import { el, clear, act, debounce, button } from "./ui.js";
import { itemNode } from "./inbox-item.js";
import { refreshInboxCount } from "./inbox-count.js";

renderNav("inbox");

const main = document.getElementById("main");
const summary = el("p", { id: "inbox-summary", class: "muted", attrs: { "aria-live": "polite" } });
const rejectHeld = button("Reject all held A2A messages", async () => {
  if (!window.confirm("Reject every held A2A message?")) return;
  await post("/api/a2a/reject", { all: true });
  refreshInboxCount();
  await load();
}, { cls: "reject-all-held danger" });
const list = el("div", { id: "inbox-items", class: "inbox-items" });
main.append(el("div", { class: "panel" }, el("div", { class: "panel-head" }, summary, rejectHeld), list));

function words(counted) {
  if (!counted.total) return "Nothing waits for you.";
  return counted.total === 1 ? "1 item waits for you." : `${counted.total} items wait for you.`;
}

async function load() {
  const listed = await get("/api/inbox");
  summary.textContent = words(listed.count);
  rejectHeld.hidden = !listed.count.by_kind.a2a_message;
  const items = listed.items || [];
  clear(list, items.length ? items.map((item) => itemNode(item, () => load())) : el("p", { class: "empty", text: "Nothing waits for you." }));
  refreshInboxCount(listed.count);
}

act(load);
stream(["inbox"], debounce(load, 100));
