-- Requests for a person's confirmation (the action gate, "destructive" risk).
-- The agent's loop does not wait on them: it records the request, tells the
-- user in a note, and carries on; the CLI (`meshnode confirm`) or another
-- front end answers; the loop runs the call once it is approved. Requests
-- expire unanswered.
CREATE TABLE gate_confirmations (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session      TEXT NOT NULL,
    tool         TEXT NOT NULL,
    args         TEXT NOT NULL,                 -- JSON: the call's arguments, as checked
    risk         TEXT NOT NULL,
    reason       TEXT NOT NULL,                 -- why it needs a person (the rule that raised it)
    status       TEXT NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'done', 'failed')),
    created_ms   INTEGER NOT NULL,
    expires_ms   INTEGER NOT NULL,
    decided_ms   INTEGER,
    decided_by   TEXT,                          -- e.g. 'cli'
    result       TEXT                           -- JSON, once it ran
);
CREATE INDEX gate_confirmations_by_status ON gate_confirmations (status, id);

-- The agent's own check of its work before its drafts go to a person
-- (reflection before completion). A submission is the request for review.
CREATE TABLE gate_submissions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session      TEXT NOT NULL,
    summary      TEXT NOT NULL,                 -- what the agent says it did and why
    reflection   TEXT,                          -- the LLM's check of its own work
    ready        INTEGER NOT NULL,              -- 1: it judged the work ready for review
    drafts       TEXT NOT NULL,                 -- JSON: the draft paths submitted
    created_ms   INTEGER NOT NULL
);
