-- A signal that would have woken an agent that cannot think (no LLM configured), told to the person
-- instead: one plain line in their inbox each (issue 35; engines/reactor/agent_off.py). Written by
-- the reactor's save_step with the step that decided it (`to_person`); read by records/inbox.py,
-- which words the line from these columns when it lists it; read_ms set when the person marks it
-- read. Unread lines are kept; read ones go with the reactor's retention.
CREATE TABLE reactor_person_lines (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    event_key   TEXT NOT NULL UNIQUE,           -- the reactor event's dedupe key
    agent       TEXT NOT NULL,                  -- the agent it was for
    event_type  TEXT NOT NULL,
    subject     TEXT NOT NULL,
    summary     TEXT NOT NULL,
    refs        TEXT NOT NULL DEFAULT '{}',     -- JSON object (the note's container, author, ...)
    at_ms       INTEGER NOT NULL,               -- when the signal happened
    created_ms  INTEGER NOT NULL,               -- the scan that told the person
    read_ms     INTEGER                         -- NULL: waits in the inbox
);
CREATE INDEX reactor_person_lines_unread ON reactor_person_lines (id) WHERE read_ms IS NULL;
CREATE INDEX reactor_person_lines_read ON reactor_person_lines (read_ms) WHERE read_ms IS NOT NULL;
