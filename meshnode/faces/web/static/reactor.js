// Reactor (/reactor): its status, events, jobs with their decisions and the rule behind each,
// the wake context the agent read, rules, unknown addressees; scan now, release a lease.
import { get, post, stream } from "./api.js";
import { renderNav } from "./nav.js";
import { el, clear, text, pre, table, facts, section, button, form, act, debounce, shortId } from "./ui.js";

renderNav("reactor");

const main = document.getElementById("main");
const scanResult = el("div", { class: "scan-result" });
const [statusSec, statusBody] = section("Status", "reactor-status",
  button("Dry-run scan", async () => clear(scanResult, pre(await post("/api/reactor/scan", { dry_run: true })))),
  button("Scan now", async () => { clear(scanResult, pre(await post("/api/reactor/scan", { dry_run: false }))); await loadAll(); }));
const [eventsSec, eventsBody] = section("Events", "events");
const [jobsSec, jobsBody] = section("Jobs", "jobs");
const [jobSec, jobBody] = section("Job", "job");
const [explainSec, explainBody] = section("Explain", "explain");
const [rulesSec, rulesBody] = section("Rules", "rules");
const [aliasSec, aliasBody] = section("Unknown addressees", "aliases");
jobSec.hidden = true;
main.append(statusSec, eventsSec, jobsSec, jobSec, explainSec, rulesSec, aliasSec);

const explained = el("div");
explainBody.append(form([{ name: "key", label: "event key, note DID or job id", required: true }], "Explain",
  async (v) => { clear(explained, pre(await get(`/api/reactor/explain/${encodeURIComponent(v.key)}`))); return false; }), explained);

async function loadStatus() {
  const s = await get("/api/reactor");
  clear(statusBody, facts(s), scanResult);
}

async function loadEvents() {
  const rows = await get("/api/reactor/events", { limit: 50 });
  clear(eventsBody, table(rows, [
    { key: "at_ms", label: "at" }, { key: "event_type", label: "event" }, { key: "agent", render: (e) => shortId(e.agent) },
    { key: "severity" }, { key: "summary", max: 160 }, { key: "status" }, { key: "decision" },
    { key: "why", render: (e) => text(e.why, 160) },
    { key: "job_id", label: "job", render: (e) => (e.job_id ? button("Open", () => showJob(e.job_id)) : "") },
  ], { empty: "no events" }));
}

async function showJob(id) {
  const j = await get(`/api/reactor/jobs/${encodeURIComponent(id)}`);
  jobSec.hidden = false;
  const { context, report, ...rest } = j;
  clear(jobBody, facts(rest),
    context ? el("details", { class: "context", open: true }, el("summary", { text: "the wake context as the agent read it" }), pre(context)) : null,
    report ? el("details", { class: "context" }, el("summary", { text: "report" }), pre(report)) : null);
  jobSec.scrollIntoView({ block: "nearest" });
}

async function loadJobs() {
  const rows = await get("/api/reactor/jobs", { limit: 50 });
  const idOf = (j) => j.job_id ?? j.id;
  const cols = [
    { key: "job_id", label: "job", render: (j) => shortId(idOf(j), 20) }, { key: "agent", render: (j) => shortId(j.agent) },
    { key: "reason", max: 120 }, { key: "status" }, { key: "created_ms", label: "created" }, { key: "ended_ms", label: "ended" },
    { key: "exit" }, { key: "events", render: (j) => String((j.events || []).length) },
  ];
  clear(jobsBody, table(rows, [...cols, { key: "", label: "", render: (j) => el("span", { class: "actions" },
    button("Open", () => showJob(idOf(j))),
    button("Release lease", async () => { await post(`/api/reactor/jobs/${encodeURIComponent(idOf(j))}/release`, {}); await loadJobs(); })) }],
  { empty: "no jobs" }));
}

async function loadRules() {
  const [rules, aliases] = await Promise.all([get("/api/reactor/rules"), get("/api/reactor/aliases")]);
  clear(rulesBody, Array.isArray(rules) ? table(rules, null, { empty: "no rules" }) : facts(rules));
  clear(aliasBody, Array.isArray(aliases) ? table(aliases, null, { empty: "none" }) : facts(aliases));
}

function loadAll() {
  return Promise.all([act(loadStatus), act(loadEvents), act(loadJobs)]);
}

const reload = debounce(() => Promise.all([loadStatus(), loadEvents(), loadJobs()]));
stream(["reactor"], reload);
loadAll();
act(loadRules);
