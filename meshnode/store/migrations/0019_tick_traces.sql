-- Issue 16 (protocols/web.md 4.4): what each tick of the cognitive cycle showed the LLM and what came
-- of it, for the notebook's mind page and `meshnode mind ticks`. One row per tick, written in the
-- tick's own last transactions (cognition/tick_traces.py); the oldest beyond [cognition]
-- keep_tick_traces are pruned with the short-term memory.
CREATE TABLE tick_traces (
    tick          INTEGER PRIMARY KEY,     -- Cycle.ticks (resumed from the checkpoint, so unique)
    started_ms    INTEGER NOT NULL,
    duration_ms   INTEGER,                 -- set at the end of the tick
    mode          TEXT NOT NULL,
    llm_id        TEXT,                    -- NULL in core outage
    llm_ms        INTEGER,                 -- the main LLM's answer time
    wake_job      TEXT,                    -- the reactor job when the tick ran in a wake
    messages_json TEXT NOT NULL,           -- the prompt as sent: [{role, content}], cut at 256 KB
    response_id   INTEGER,                 -- llm_recent_responses.id (answer, ratings, validators)
    summary_json  TEXT,                    -- the tick summary
    answer        TEXT,                    -- the answer when it has no response row (a repetition)
    log_first     INTEGER,                 -- process_log ids of the tick's own rows (cmd:*, tick ...):
    log_last      INTEGER                  --   from log_first (when it asked the LLM) to log_last (its end)
);
-- held_commands.tick for the tick view's held ids
CREATE INDEX held_commands_by_tick ON held_commands (tick);
