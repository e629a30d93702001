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

-- The reactor's scan for what the tasks a node created gave (a progress entry or a result by
-- another, engines/reactor/adapters_tasks.work_events) reads recent rows only: by creator and
-- time, and progress entries by time.
CREATE INDEX tasks_by_creator ON tasks (creator_did, timestamp_ms);
CREATE INDEX gmp_entries_by_kind_time ON gmp_entries (kind, timestamp_ms);
