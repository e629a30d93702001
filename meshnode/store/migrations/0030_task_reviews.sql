-- A delegator's review of a task's result (issue 37): this node's own mark, never signed or synced,
-- like tasks.pinned. One row per task version reviewed (the completed or failed version shown when
-- the review was made), so a result reached again after a reopening is a new one to review.
CREATE TABLE task_reviews (
    lineage     TEXT NOT NULL,
    version     TEXT NOT NULL,               -- the task version whose result was reviewed
    verdict     TEXT NOT NULL CHECK (verdict IN ('accepted', 'rejected')),
    reason      TEXT,
    actor       TEXT,                        -- who asked (an actor's kind: person, agent, ...)
    at_ms       INTEGER NOT NULL,
    PRIMARY KEY (lineage, version)
);
-- A database from before: the results it holds were looked at (or not) before reviews existed;
-- they count as reviewed, so that an upgrade does not ask the agent to review its whole past.
INSERT INTO task_reviews (lineage, version, verdict, reason, actor, at_ms)
    SELECT lineage, container_did, 'accepted', 'finished before reviews existed', 'migration',
           CAST(strftime('%s', 'now') AS INTEGER) * 1000
      FROM tasks WHERE lineage IS NOT NULL AND container_did IS NOT NULL AND status IN ('completed', 'failed');

-- The results a node's tasks gave (the reactor's scan, engines/reactor/adapters_tasks.work_events,
-- and the agent's prompt, records/gmp/waiting.py) are read by creator and time: recent rows only.
-- Partial (finished tasks only), so that no other query on tasks is drawn to it.
CREATE INDEX tasks_finished_by_creator ON tasks (creator_did, timestamp_ms) WHERE status IN ('completed', 'failed');
