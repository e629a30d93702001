-- External processes the cognitive core starts (seed 000: "process
-- list/start/stop/mark/cleanup"). A process runs through the action gate's
-- command runner (an allowlisted program, no shell, limits); its outcome is
-- also written to process_log, where the next tick shows it to the LLM.
CREATE TABLE processes (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    argv         TEXT NOT NULL,                 -- JSON array: the program and its arguments
    status       TEXT NOT NULL DEFAULT 'running'
                 CHECK (status IN ('running', 'exited', 'failed', 'timeout', 'stopped', 'lost')),
    exit_code    INTEGER,
    result       TEXT,                          -- JSON: the runner's summary (output capped)
    started_at   INTEGER NOT NULL,              -- ms since the epoch
    ended_at     INTEGER,
    marked       INTEGER NOT NULL DEFAULT 0,    -- 1: the LLM marked the result handled (seed: "close")
    task_id      INTEGER,                       -- the task it serves, when one was named
    llm_id       TEXT
);

CREATE INDEX processes_by_status ON processes (status, id);
