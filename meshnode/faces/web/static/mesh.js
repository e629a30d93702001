// Mesh (/mesh): peers (connected, liveness, trust, friend), find, consensus, reputation.
import { get, post, stream } from "./api.js";
import { renderNav } from "./nav.js";
import { el, clear, text, pre, table, facts, section, button, form, act, debounce, shortId } from "./ui.js";
import { columnsOf, names } from "./reading.js";

renderNav("mesh");

const main = document.getElementById("main");
const [peersSec, peersBody] = section("Peers", "peers");
const [findSec, findBody] = section("Find", "find");
const [consSec, consBody] = section("Consensus", "consensus");
const [repSec, repBody] = section("Reputation", "reputation",
  button("Run a round", async () => { await post("/api/reputation/round", {}); await loadReputation(); }));
main.append(peersSec, findSec, consSec, repSec);

const findResult = el("div", { class: "find-result" });
findBody.append(form([
  { name: "did", label: "DID" }, { name: "interest", label: "or interest" },
], "Find", async (v) => { clear(findResult, pre(await get("/api/find", v))); }), findResult);

const pingResult = el("p", { class: "muted" });
let shownPeers = [];
async function loadPeers() {
  const [peers, friends] = await Promise.all([get("/api/peers"), get("/api/friends").catch(() => [])]);
  shownPeers = peers;
  const friendSet = new Set((friends || []).map((f) => (typeof f === "string" ? f : f.did)));
  clear(peersBody, table(peers, [
    { key: "name", render: (p) => (p.name ? el("strong", { class: "who", text: p.name, title: p.did }) : shortId(p.did, 16)) },
    { key: "connected", render: (p) => el("span", { class: p.connected ? "connected" : "muted", text: p.connected ? "connected" : "not connected" }) },
    { key: "liveness" }, { key: "status", label: "standing" }, { key: "last_heard_ms", label: "last heard" },
    { key: "friend", render: (p) => (friendSet.has(p.did) ? "friend" : "") },
    { key: "", label: "", render: (p) => el("span", { class: "actions" },
      button("Ping", async () => { const r = await post("/api/peers/ping", { did: p.did }); pingResult.textContent = `${p.name || p.did}: ${r.rtt_ms} ms`; }),
      button("Sync", async () => { const r = await post("/api/sync", { did: p.did }); pingResult.textContent = `sync with ${p.name || p.did}: ${text(r, 200)}`; }),
      button(friendSet.has(p.did) ? "Unfriend" : "Friend", async () => { await post("/api/friends", { did: p.did, on: !friendSet.has(p.did) }); await loadPeers(); }),
      button("Reputation", () => showReputation(p.did))) },
  ], { empty: "no peers known yet", rowData: (p) => ({ did: p.did }), rowClass: (p) => (p.connected ? "peer connected" : "peer") }), pingResult);
}

async function loadConsensus() {
  const [status, decisions] = await Promise.all([get("/api/consensus"), get("/api/consensus/decisions").catch(() => [])]);
  const parts = [facts(status, Object.keys(status).filter((k) => k !== "members"))];
  if (status.enabled) {
    parts.push(form([{ name: "value", label: "propose a value", required: true }], "Propose",
      async (v) => { clear(proposal, pre(await post("/api/consensus/propose", v))); await loadConsensus(); }), proposal);
  }
  parts.push(el("h3", { text: "Last decisions" }), table(decisions, columnsOf(decisions, await names()), { empty: "no decisions" }));
  clear(consBody, parts);
}
const proposal = el("div");

const repDetail = el("div", { class: "reputation-detail" });
async function showReputation(did) {
  const d = await get(`/api/reputation/${encodeURIComponent(did)}`);
  const known = await names();
  clear(repDetail, el("h3", {}, "Detail of ", known.has(did) ? el("span", { text: known.get(did), title: did }) : shortId(did, 16)), facts(d),
    form([{ name: "score", label: "set trust (0 none, 0.5 unknown, 1 full)", type: "number", step: "0.1", required: true }, { name: "reason", label: "reason" }],
      "Set trust", async (v) => { await post(`/api/reputation/${encodeURIComponent(did)}`, v); await loadReputation(); await showReputation(did); }));
}

async function loadReputation() {
  const [rows, known] = await Promise.all([get("/api/reputation"), names()]);
  clear(repBody, table(rows, columnsOf(rows, known), { empty: "no reputation yet" }), repDetail);
}

const reloadPeers = debounce(loadPeers);

/** A peer event can come before the peer's row (and its name, from the exchange that follows the
 * connection) is stored: look again a few times, a second apart, until the row says what the event did. */
function follow(data, tries = 10) {
  const row = shownPeers.find((p) => p.did === data.did);
  if (row && row.name && Boolean(row.connected) === Boolean(data.connected)) return;
  if (tries > 0) setTimeout(() => act(async () => { await loadPeers(); follow(data, tries - 1); }), 1000);
}
stream(["peer"], (type, data) => {
  reloadPeers();
  if (data && data.did) follow(data);
});
act(loadPeers);
act(loadConsensus);
act(loadReputation);
