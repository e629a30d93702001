// Reactor (/reactor): a timeline in words first (what woke whom, why, what the agent did, what was
// escalated; newest first, one entry a wake), then its status, events, jobs with their decisions and
// the rule behind each, the wake context the agent read, rules, unknown addressees; scan now,
// release a lease.
import { get, post, stream } from "./api.js";
import { renderNav } from "./nav.js";
import { el, clear, time, pre, table, facts, section, button, form, act, debounce, olderButton } from "./ui.js";
import { names, named, who } from "./reading.js";

renderNav("reactor");

const main = document.getElementById("main");
const scanResult = el("div", { class: "scan-result" });
const [statusSec, statusBody] = section("Status", "reactor-status",
  button("Dry-run scan", async () => clear(scanResult, pre(await post("/api/reactor/scan", { dry_run: true })))),
  button("Scan now", async () => { clear(scanResult, pre(await post("/api/reactor/scan", { dry_run: false }))); await loadAll(); }));
const [timeSec, timeBody] = section("What happened", "timeline");
const timeline = el("ol", { class: "timeline", id: "timeline-list", attrs: { "aria-live": "polite" } });
const olderWakes = olderButton("older");
timeBody.append(timeline, olderWakes);
const [eventsSec, eventsBody] = section("Events", "events");
const [jobsSec, jobsBody] = section("Jobs", "jobs");
const [jobSec, jobBody] = section("Job", "job");
const [explainSec, explainBody] = section("Explain", "explain");
const [rulesSec, rulesBody] = section("Rules", "rules");
const [aliasSec, aliasBody] = section("Names the reactor knows", "aliases");
jobSec.hidden = true;
main.append(timeSec, statusSec, eventsSec, jobsSec, jobSec, explainSec, rulesSec, aliasSec);

const explained = el("div");
explainBody.append(form([{ name: "key", label: "event key, note DID or job id", required: true }], "Explain",
  async (v) => { clear(explained, pre(await get(`/api/reactor/explain/${encodeURIComponent(v.key)}`))); return false; }), explained);

/** One wake (or a signal that woke nobody) as a few sentences: why, what the agent did, what was escalated. */
function wakeNode(w) {
  const li = el("li", { class: `wake ${w.kind}`, data: { kind: w.kind, ...(w.job_id ? { job: w.job_id } : {}) } },
    el("p", { class: "when muted" }, time(w.at_ms)),
    el("p", { class: "sentence", text: w.sentence }));
  if (w.kind === "signal") {
    li.append(el("p", { class: "why", text: w.text }));
    return li;
  }
  if ((w.signals || []).length) {
    li.append(el("p", { class: "label", text: w.signals.length === 1 ? "The signal:" : "The signals:" }),
      el("ul", { class: "signals" }, w.signals.map((s) => el("li", {}, el("span", { class: "what", text: s.what }), " — ", s.text))),
      ...(w.signals_more ? [el("p", { class: "muted", text: `and ${w.signals_more} more` })] : []));
  }
  li.append(el("p", { class: "did" }, el("span", { class: "label", text: "What it did: " }), w.did));
  for (const x of w.escalations || []) {
    li.append(el("p", { class: "escalated" }, el("span", { class: "label", text: "Escalated to " }), who(x.to, x.to_id),
      ` (level ${x.level}${x.sent ? "" : ", not sent yet"}): ${x.text}`));
  }
  li.append(el("div", { class: "actions" }, button("The wake in detail", () => showJob(w.job_id), { cls: "open-job" })));
  return li;
}

async function loadTimeline(before = null) {
  const rows = await get("/api/reactor/timeline", { limit: 20, ...(before != null ? { before_ms: before } : {}) });
  if (before == null) clear(timeline);
  timeline.append(...rows.map(wakeNode));
  if (before == null && !rows.length) timeline.append(el("li", { class: "empty", text: "nothing woke the agent yet" }));
  olderWakes.offer(rows.length >= 20, () => loadTimeline(rows[rows.length - 1].at_ms));
}

async function loadStatus() {
  const s = await get("/api/reactor");
  clear(statusBody, facts(s), scanResult);
}

async function loadEvents() {
  const [rows, known] = await Promise.all([get("/api/reactor/events", { limit: 50 }), names()]);
  clear(eventsBody, table(rows, [
    { key: "at_ms", label: "at" }, { key: "event_type", label: "event" }, { key: "agent", label: "for", render: (e) => named(known, e.agent) },
    { key: "severity" }, { key: "summary", max: 160 }, { key: "status" }, { key: "decision" },
    { key: "why", render: (e) => nameIn(known, e.why) },
    { key: "job_id", label: "job", render: (e) => (e.job_id ? button("Open", () => showJob(e.job_id)) : "") },
  ], { empty: "no events" }));
}

async function showJob(id) {
  const j = await get(`/api/reactor/jobs/${encodeURIComponent(id)}`);
  jobSec.hidden = false;
  const { context, report, job_id: jobId, agent, dedupe_key: key, events, ...rest } = j;
  const known = await names();
  clear(jobBody, el("p", {}, "A wake of ", named(known, agent), "."), facts(rest),
    el("details", { class: "fold ids" }, el("summary", { text: "ids" }), facts({ job: jobId, agent, key, events })),
    context ? el("details", { class: "context" }, el("summary", { text: "the wake context, as the agent read it" }), pre(context)) : null,
    report ? el("details", { class: "context" }, el("summary", { text: "report" }), pre(report)) : null);
  jobSec.scrollIntoView({ block: "nearest" });
}

/** A text with the DIDs in it replaced by names. */
function nameIn(known, s) {
  return String(s ?? "").replace(/did:(?:key|hmp):[A-Za-z0-9._:%-]+/g, (d) => known.get(d) || `…${d.slice(-8)}`);
}

async function loadJobs() {
  const [rows, known] = await Promise.all([get("/api/reactor/jobs", { limit: 50 }), names()]);
  const idOf = (j) => j.job_id ?? j.id;
  const cols = [
    { key: "agent", label: "for", render: (j) => named(known, j.agent) },
    { key: "reason", render: (j) => (Array.isArray(j.reason) ? j.reason.join(", ").replace(/_/g, " ") : String(j.reason ?? "")) }, { key: "status" }, { key: "created_ms", label: "created" }, { key: "ended_ms", label: "ended" },
    { key: "exit" }, { key: "events", render: (j) => String((j.events || []).length) },
  ];
  clear(jobsBody, table(rows, [...cols, { key: "", label: "", render: (j) => el("span", { class: "actions" },
    button("Open", () => showJob(idOf(j)), { title: `job ${idOf(j)}` }),
    button("Release lease", async () => { await post(`/api/reactor/jobs/${encodeURIComponent(idOf(j))}/release`, {}); await loadJobs(); })) }],
  { empty: "no jobs" }));
}

async function loadRules() {
  const [rules, aliases, known] = await Promise.all([get("/api/reactor/rules"), get("/api/reactor/aliases"), names()]);
  clear(rulesBody, Array.isArray(rules) ? table(rules, null, { empty: "no rules" }) : facts(rules));
  clear(aliasBody, Array.isArray(aliases) ? table(aliases, [
    { key: "agent", label: "who", render: (a) => (String(a.agent || "").startsWith("did:") ? named(known, a.agent) : String(a.agent ?? a.name ?? "")) },
    { key: "self", label: "this node", render: (a) => (a.self ? "yes" : "") },
    { key: "aliases", label: "known as", render: (a) => (a.aliases || []).join(", ") || "no other name" },
  ], { empty: "none" }) : facts(aliases));
}

function loadAll() {
  return Promise.all([act(() => loadTimeline()), act(loadStatus), act(loadEvents), act(loadJobs)]);
}

const reload = debounce(() => Promise.all([loadTimeline(), loadStatus(), loadEvents(), loadJobs()]));
stream(["reactor"], reload);
loadAll();
act(loadRules);
