-- Commands the validation reflex held (issue 12, item 11). When the validators
-- reject an answer, or none of them gives a verdict, its commands do not run:
-- they wait here for a person (`meshnode mind held|release|drop`). A released
-- command is run by the node (at once when it runs, else when it starts);
-- `running` marks one taken to run, so a crash never runs it twice.
CREATE TABLE held_commands (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    tick         INTEGER NOT NULL,
    cmd_id       TEXT NOT NULL,
    type         TEXT NOT NULL,
    command      TEXT NOT NULL,                 -- JSON: the command as extracted and checked
    kind         TEXT NOT NULL CHECK (kind IN ('rejected', 'no_verdict')),
    reason       TEXT NOT NULL,                 -- why it is held, in a person's words
    status       TEXT NOT NULL DEFAULT 'held'
                 CHECK (status IN ('held', 'released', 'running', 'done', 'failed', 'dropped', 'expired')),
    created_ms   INTEGER NOT NULL,
    decided_ms   INTEGER,
    decided_by   TEXT,                          -- e.g. 'cli'
    result       TEXT                           -- JSON, once it ran
);
CREATE INDEX held_commands_by_status ON held_commands (status, id);

-- Decisions taken in isolated mode that needed the mesh (issue 12, item 16):
-- one row per such command, kept on this node only (never a container, never
-- shared). When the mesh is back, one pinned task lists those not yet revisited.
CREATE TABLE emergency_decisions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    created_ms   INTEGER NOT NULL,
    tick         INTEGER,
    cmd_id       TEXT NOT NULL,
    type         TEXT NOT NULL,
    why          TEXT NOT NULL,                 -- why it needed the mesh
    summary      TEXT NOT NULL,                 -- the command and its outcome, one line
    status       TEXT NOT NULL CHECK (status IN ('ok', 'error')),
    decided_by   TEXT NOT NULL DEFAULT 'agent', -- 'agent', or the person who released it
    revisit_task INTEGER                        -- tasks.id of the task that lists it; NULL: not yet
);
CREATE INDEX emergency_decisions_to_revisit ON emergency_decisions (revisit_task, id);
