// One item of the person's inbox as a card: who asks and what, when, the conversation it belongs to,
// what it holds (folded), and its decisions as buttons in place. A decision is POST /api/inbox/decide,
// which calls the action that decides that kind (confirm_decide, mind_release, drafts_decide...).
// Used by /inbox (inbox.js) and inline in a conversation (inbox-inline.js).
import { post } from "./api.js";
import { el, time, button } from "./ui.js";
import { refreshInboxCount } from "./inbox-count.js";

export const KIND_WORDS = {
  confirmation: "confirmation", a2a_message: "held A2A message", held_command: "held command",
  draft: "draft", drafts_accepted: "accepted drafts", escalation: "escalation",
};

/** Decide ``item`` with ``decision`` (one of its actions' names); the count is read again at once. */
export async function decide(item, decision) {
  const result = await post("/api/inbox/decide", { kind: item.kind, ref: String(item.ref), decision });
  refreshInboxCount(result.count);
  return result;
}

function detailNode(item) {
  if (!item.detail) return null;
  const box = el("pre", { class: item.kind === "draft" ? "diff" : "inbox-detail" });
  if (item.kind === "draft") {
    for (const line of item.detail.split("\n")) {
      const cls = line.startsWith("+++") || line.startsWith("---") || line.startsWith("@@") ? "hunk"
        : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
      box.append(el("span", { class: cls, text: line || " " }));
    }
  } else box.textContent = item.detail;
  return el("details", { class: "inbox-more" }, el("summary", { text: item.kind === "draft" ? "the change" : "in full" }), box);
}

function whereNode(item, inline) {
  if (item.thread && !inline) {
    return el("a", { class: "inbox-thread", href: `/?thread=${encodeURIComponent(item.thread)}`, text: "in its conversation" });
  }
  if (item.context_id) return el("span", { class: "muted", text: `A2A conversation ${item.context_id}`, title: "the A2A contextId" });
  return null;
}

/** The card of ``item``; ``onDone(result)`` after a decision (the caller reloads what it shows).
 * ``inline``: shown inside its conversation (no link to it). */
export function itemNode(item, onDone, { inline = false } = {}) {
  const label = `${KIND_WORDS[item.kind] || item.kind}: ${item.summary}`;
  const actions = el("div", { class: "actions", attrs: { role: "group", "aria-label": `decide: ${item.summary}` } },
    item.actions.map((a) => button(a.label, async () => onDone(await decide(item, a.name)),
      { cls: `decide decide-${a.name}${a.discards ? " danger" : ""}`, data: { decision: a.name } })));
  return el("article", { class: `inbox-item kind-${item.kind}`, data: { kind: item.kind, id: item.id }, attrs: { "aria-label": label } },
    el("div", { class: "inbox-head" },
      el("span", { class: "badge inbox-kind", text: KIND_WORDS[item.kind] || item.kind }),
      el("span", { class: "inbox-who", text: item.who }), time(item.when_ms), whereNode(item, inline),
      item.expires_ms ? el("span", { class: "muted" }, "expires ", time(item.expires_ms)) : null),
    el("p", { class: "inbox-summary", text: item.summary }),
    detailNode(item),
    actions);
}
