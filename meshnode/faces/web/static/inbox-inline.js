// The items of the person's inbox that belong to one conversation (a confirmation the agent asked
// while answering in it, a held reply), shown in that conversation with their decisions in place.
// conversation.js calls renderInboxInline(container, threadId) whenever it shows a thread.
import { get, stream } from "./api.js";
import { el, clear, act, debounce } from "./ui.js";
import { itemNode } from "./inbox-item.js";

const state = { box: null, thread: null, subscribed: false };

async function load() {
  const { box, thread } = state;
  if (!box) return;
  if (!thread) { clear(box); box.hidden = true; return; }
  const listed = await get("/api/inbox", { thread });
  if (thread !== state.thread) return;
  const items = listed.items || [];
  box.hidden = items.length === 0;
  clear(box, items.length ? el("h3", { text: `Waiting for you in this conversation (${items.length})` }) : null,
    items.map((item) => itemNode(item, () => load(), { inline: true })));
}

/** Show thread ``threadId``'s waiting items in ``container`` (before its composer form, if it has
 * one); null: none. Calling it again moves to another thread; the items stay live. */
export function renderInboxInline(container, threadId) {
  if (!state.box || !container.contains(state.box)) {
    state.box = el("section", { class: "inbox-inline", id: "inbox-inline", hidden: true, attrs: { "aria-live": "polite", "aria-label": "waiting for you in this conversation" } });
    const form = container.querySelector("form");
    if (form && form.parentNode === container) container.insertBefore(state.box, form); else container.append(state.box);
  }
  state.thread = threadId || null;
  if (!state.subscribed) {
    state.subscribed = true;
    stream(["inbox"], debounce(load, 100));
  }
  return act(load);
}
