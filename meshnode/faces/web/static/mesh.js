// Mesh (/mesh): peers (connected, liveness, trust, friend, the name the person gives each), find,
// consensus, reputation.
import { get, post, stream } from "./api.js";
import { renderNav } from "./nav.js";
import { el, clear, text, pre, table, facts, section, button, form, act, debounce, keeper, shortId } from "./ui.js";
import { columnsOf, forgetNames, names } from "./reading.js";

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
const renames = keeper();  // an open rename form survives the redraws peer events cause
let shownPeers = [];
let petnames = new Map();  // DID -> its row of GET /api/names

/** The name the person reads (the petname, else the one the peer announced), the DID on hover. */
function peerName(p) {
  const n = petnames.get(p.did);
  const shown = (n && n.name) || p.name;
  if (!shown) return shortId(p.did, 16);  // only while /api/names has not seen it yet
  const name = el("strong", { class: "who", text: shown, title: p.did });
  return n && n.petname && n.announced && n.announced !== n.petname
    ? el("span", {}, name, el("span", { class: "muted announced", text: ` calls itself ${n.announced}` })) : name;
}

function called(p) {
  const n = petnames.get(p.did);
  return (n && n.name) || p.name || p.did;
}

/** "Rename": a petname for the peer, on this node only (POST /api/names); "Forget" drops it. */
function renameControl(p) {
  const details = renames.keep(p.did, () => {
    const forget = button("Forget petname", async () => {
      await post("/api/names/unset", { agent: p.did });
      details.open = false;
      await namesChanged();
    }, { cls: "forget-petname" });
    const f = form([{ name: "petname", label: "petname (this node only)", required: true }], "Save", async (v) => {
      await post("/api/names", { agent: p.did, petname: v.petname });
      details.open = false;
      await namesChanged();
    }, { cls: "rename-form" });
    f.inputs.petname.maxLength = 32;
    const d = el("details", { class: "rename" }, el("summary", { text: "Rename" }), f, forget);
    d.forget = forget;
    d.field = f.inputs.petname;
    return d;
  });
  const n = petnames.get(p.did);
  details.forget.hidden = !(n && n.petname);
  if (!details.open) details.field.placeholder = (n && (n.petname || n.announced)) || "";
  return details;
}

async function namesChanged() {
  forgetNames();  // the other sections read names() again
  await Promise.all([loadPeers(), loadReputation()]);
}

async function loadPeers() {
  const [peers, friends, known] = await Promise.all([get("/api/peers"), get("/api/friends").catch(() => []),
    get("/api/names").catch(() => [])]);
  shownPeers = peers;
  petnames = new Map((known || []).map((n) => [n.did, n]));
  const friendSet = new Set((friends || []).map((f) => (typeof f === "string" ? f : f.did)));
  clear(peersBody, table(peers, [
    { key: "name", render: peerName },
    { key: "connected", render: (p) => el("span", { class: p.connected ? "connected" : "muted", text: p.connected ? "connected" : "not connected" }) },
    { key: "liveness" }, { key: "status", label: "standing" }, { key: "last_heard_ms", label: "last heard" },
    { key: "friend", render: (p) => (friendSet.has(p.did) ? "friend" : "") },
    { key: "", label: "", render: (p) => el("span", { class: "actions" },
      button("Ping", async () => { const r = await post("/api/peers/ping", { did: p.did }); pingResult.textContent = `${called(p)}: ${r.rtt_ms} ms`; }),
      button("Sync", async () => { const r = await post("/api/sync", { did: p.did }); pingResult.textContent = `sync with ${called(p)}: ${text(r, 200)}`; }),
      button(friendSet.has(p.did) ? "Unfriend" : "Friend", async () => { await post("/api/friends", { did: p.did, on: !friendSet.has(p.did) }); await loadPeers(); }),
      button("Reputation", () => showReputation(p.did)),
      renameControl(p)) },
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
