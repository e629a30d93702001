// The inbox's count in the top bar of every page: a badge on the Inbox link, read from
// /api/inbox/count when the page loads and again at each `inbox` event of the feed (a confirmation
// asked or answered, a command held or decided, a draft, an escalation). nav.js mounts it.
import { get, stream } from "./api.js";
import { el, act, debounce } from "./ui.js";

const state = { badge: null, link: null, total: null };

function paint(counted) {
  if (!state.badge || !counted) return;
  state.total = counted.total;
  state.badge.textContent = String(counted.total);
  state.badge.dataset.count = String(counted.total);
  state.badge.classList.toggle("waiting", counted.total > 0);
  const what = counted.total === 1 ? "1 item waits for you" : `${counted.total} items wait for you`;
  state.link.setAttribute("aria-label", `Inbox: ${what}`);
  state.link.title = what;
}

/** Show ``counted`` ({total, by_kind}, e.g. a decision's answer), or read the count again when not given. */
export function refreshInboxCount(counted = null) {
  if (counted) return paint(counted);
  return act(async () => paint(await get("/api/inbox/count")));
}

/** Put the count on the nav's Inbox link (made when the nav has none) and keep it live. */
export function mountInboxCount(nav) {
  let link = nav.querySelector('a[href="/inbox"]');
  if (!link) {
    link = el("a", { href: "/inbox", text: "Inbox" });
    nav.append(link);
  }
  state.link = link;
  state.badge = el("span", { class: "badge inbox-count", text: "…", attrs: { "aria-hidden": "true" } });
  link.append(" ", state.badge);
  refreshInboxCount();
  const again = debounce(() => refreshInboxCount(), 100);
  const source = stream(["inbox"], again);
  if (source && typeof source.addEventListener === "function") source.addEventListener("open", again);
}
