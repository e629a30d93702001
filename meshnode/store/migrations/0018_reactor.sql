-- The reactor (protocols/reactor.md section 11, issue 15): every event it accepted, every decision
-- it took, its wake jobs, cooldowns, leases, failure counts and escalations, so that a restart or a
-- replay of the same signals produces nothing new and `meshnode reactor explain` can say why.
-- Written by meshnode.reactor.persist (one transaction per scan) and records.reactor.leases; read by
-- records.reactor.audit.

-- One row per accepted dedupe key. status is the core's (StateDelta.event_status):
-- pending | job | held | dropped | digest | noise | unknown | expired | done | failed
-- (held: waiting behind a wake cooldown or budget; dropped: taken out by its nudge cooldown, never
-- pending again, so persist.load_state skips it).
CREATE TABLE reactor_events (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    dedupe_key      TEXT NOT NULL UNIQUE,
    event_type      TEXT NOT NULL,
    subject         TEXT NOT NULL,
    agent           TEXT NOT NULL,                -- canonical id, or the raw addressee when unknown
    severity        INTEGER NOT NULL,             -- 1 (P1) .. 4 (P4)
    route           TEXT NOT NULL,
    required_trace  TEXT NOT NULL,                -- JSON array of trace kinds
    source          TEXT NOT NULL,                -- the adapter
    summary         TEXT NOT NULL,
    refs            TEXT NOT NULL DEFAULT '{}',   -- JSON object
    noise           TEXT NOT NULL DEFAULT '',     -- the noise filter that dropped it, if any
    at_ms           INTEGER NOT NULL,             -- when the signal happened
    seen_ms         INTEGER NOT NULL,             -- first scan that saw it
    last_seen_ms    INTEGER NOT NULL,             -- last scan that saw it (dedupe window, retention)
    status          TEXT NOT NULL
                    CHECK (status IN ('pending', 'job', 'held', 'dropped', 'digest', 'noise', 'unknown', 'expired',
                                      'done', 'failed')),
    job_id          TEXT
);
CREATE INDEX reactor_events_by_agent ON reactor_events (agent, job_id);
CREATE INDEX reactor_events_by_seen ON reactor_events (seen_ms);
CREATE INDEX reactor_events_by_last_seen ON reactor_events (last_seen_ms);
CREATE INDEX reactor_events_by_status ON reactor_events (status, agent);
CREATE INDEX reactor_events_by_job ON reactor_events (job_id) WHERE job_id IS NOT NULL;

-- Every decision but `duplicate` (a replay would write one per sighting; counted in metrics instead).
CREATE TABLE reactor_decisions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms       INTEGER NOT NULL,
    dedupe_key  TEXT NOT NULL,                    -- the event, job or escalation it is about
    action      TEXT NOT NULL,
    rule        TEXT,
    why         TEXT NOT NULL DEFAULT '',
    job_id      TEXT
);
CREATE INDEX reactor_decisions_by_key ON reactor_decisions (dedupe_key);
CREATE INDEX reactor_decisions_by_at ON reactor_decisions (at_ms);
CREATE INDEX reactor_decisions_by_job ON reactor_decisions (job_id) WHERE job_id IS NOT NULL;

-- Wake jobs. `job` is the core's whole WakeJob (JSON, what load_state rebuilds it from); the other
-- columns are for reads. started_ms, ended_ms, exit and report are the driver's (set_job_status).
CREATE TABLE reactor_jobs (
    job_id          TEXT PRIMARY KEY,
    agent           TEXT NOT NULL,
    priority        INTEGER NOT NULL,
    reason          TEXT NOT NULL,                -- JSON array of rule names
    status          TEXT NOT NULL
                    CHECK (status IN ('queued', 'leased', 'running', 'checking', 'ok', 'failed',
                                      'interrupted', 'skipped')),
    created_ms      INTEGER NOT NULL,
    started_ms      INTEGER,
    ended_ms        INTEGER,
    exit            TEXT,                         -- ok | timeout | error | budget | interrupted
    max_runtime_s   INTEGER NOT NULL,
    required_trace  TEXT NOT NULL,                -- JSON array
    events          TEXT NOT NULL,                -- JSON array of dedupe keys
    dedupe_key      TEXT NOT NULL,
    context         TEXT,                         -- JSON (wake_context.build)
    report          TEXT,                         -- JSON: the final report as received
    missing         TEXT,                         -- JSON array: events without a trace
    job             TEXT NOT NULL                 -- JSON: the WakeJob but its context
);
CREATE INDEX reactor_jobs_by_agent ON reactor_jobs (agent, created_ms);
CREATE INDEX reactor_jobs_by_status ON reactor_jobs (status);
CREATE INDEX reactor_jobs_by_created ON reactor_jobs (created_ms);

CREATE TABLE reactor_cooldowns (
    key        TEXT PRIMARY KEY,                  -- wake:<agent>, nudge:<lineage>:<agent>, msg:..., esc:...,
                                                  -- check:<agent>, int:<event key> (its job interrupted once)
    until_ms   INTEGER NOT NULL,
    count      INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX reactor_cooldowns_by_until ON reactor_cooldowns (until_ms);

-- At most one running wake per agent, across processes (design 7.2: the upsert in records.reactor.leases.take_lease).
CREATE TABLE reactor_leases (
    agent       TEXT PRIMARY KEY,
    job_id      TEXT NOT NULL,
    holder      TEXT NOT NULL,                    -- <pid>@<hostname>:<boot ms>
    expires_ms  INTEGER NOT NULL
);

CREATE TABLE reactor_failures (
    agent       TEXT NOT NULL,
    dedupe_key  TEXT NOT NULL,
    count       INTEGER NOT NULL,
    level       INTEGER NOT NULL,                 -- 0 agent, 1 mentor, 2 operator
    last_job    TEXT,
    PRIMARY KEY (agent, dedupe_key)
);

-- Escalation keys are dedupe keys: a row here is never sent again. container_id is the note sent
-- (NULL until the driver sent it: persist.unsent_escalations lists those).
CREATE TABLE reactor_escalations (
    key           TEXT PRIMARY KEY,
    agent         TEXT NOT NULL,
    to_id         TEXT NOT NULL,
    level         INTEGER NOT NULL,
    event_key     TEXT NOT NULL,
    event_type    TEXT NOT NULL DEFAULT '',
    subject       TEXT NOT NULL DEFAULT '',
    text          TEXT NOT NULL DEFAULT '',
    job_id        TEXT,
    sent_ms       INTEGER NOT NULL,
    container_id  TEXT
);
CREATE INDEX reactor_escalations_by_event ON reactor_escalations (event_key);
CREATE INDEX reactor_escalations_unsent ON reactor_escalations (sent_ms) WHERE container_id IS NULL;

-- The notes adapter's reads (reactor.adapters_notes, reactor.traces), each a range scan instead of a
-- pass over the whole table: unread notes by time; one author's notes by time (the repeat and flood
-- filters, the trace check); one topic's notes by time, and the notes that may be addressed (with
-- mentions, the person's own) by time (unanswered threads).
CREATE INDEX reactor_notes_unread ON notes (timestamp) WHERE read = 0 AND hidden = 0;
CREATE INDEX reactor_notes_by_author ON notes (agent_did, timestamp);
CREATE INDEX reactor_notes_by_topic ON notes (topic, timestamp) WHERE topic IS NOT NULL;
CREATE INDEX reactor_notes_mentions ON notes (timestamp) WHERE mentions NOT IN ('', '[]');
CREATE INDEX reactor_notes_person ON notes (timestamp) WHERE source IN ('cli', 'user');
-- person.draft: the undecided drafts without reading the committed history.
CREATE INDEX reactor_drafts_by_status ON gate_drafts (status, id);
