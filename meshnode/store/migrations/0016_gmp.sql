-- GMP (protocols/gmp.md, issue 14): goals, goal_links and tasks become views
-- of signed goal/task/workflow_entry 1.1 containers, as the diary and the
-- concepts did (0005, 0006). The three tables are rebuilt with their rows kept
-- and the old words mapped to gmp.md's: task status open -> pending,
-- done -> completed, frozen -> paused; goal priority low/normal/high ->
-- 0.25/0.5/0.75. Rows with lineage IS NULL are local-only (never published).
--
-- How the rebuild keeps foreign keys: llm_recent_responses.task_id names
-- tasks(id), and goal_links/tasks name goals(id). ALTER TABLE ... RENAME
-- would rewrite those references to the renamed table (SQLite >= 3.26 does
-- so even with legacy_alter_table, whenever foreign_keys is on, and the
-- runner's transaction cannot turn it off), leaving them dangling once the
-- old table is dropped. So the rows are copied aside, the tables dropped and
-- created again under their own names, and the rows put back: the implicit
-- DELETE of DROP TABLE leaves child rows without a parent for a moment, which
-- defer_foreign_keys turns into a deferred count that re-inserting the same
-- ids brings back to zero before COMMIT (no ON DELETE action exists on these
-- references). AUTOINCREMENT counters are carried over so ids are not reused.
-- tag_usage is dropped and created again for the same reason (0006's rename of
-- concepts and links had left it pointing at concepts_v1 and links_v1).

PRAGMA defer_foreign_keys = ON;

DROP VIEW tag_usage;

CREATE TABLE gmp_seq_v1 AS SELECT name, seq FROM sqlite_sequence WHERE name IN ('goals', 'tasks');
CREATE TABLE goals_v1 AS SELECT * FROM goals;
CREATE TABLE goal_links_v1 AS SELECT * FROM goal_links;
CREATE TABLE tasks_v1 AS SELECT * FROM tasks;
DROP TABLE goal_links;
DROP TABLE tasks;
DROP TABLE goals;

CREATE TABLE goals (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    name              TEXT NOT NULL,
    description       TEXT,
    tags              TEXT,                      -- JSON array of strings
    status            TEXT DEFAULT 'active'
                      CHECK (status IN ('proposed', 'active', 'paused', 'completed', 'cancelled', 'failed')),
    priority          REAL DEFAULT 0.5,          -- 0..1
    constraints       TEXT,                      -- JSON array
    success_criteria  TEXT,                      -- JSON array
    created_at        TEXT DEFAULT CURRENT_TIMESTAMP,
    updated_at        TEXT,
    llm_id            TEXT,
    lineage           TEXT UNIQUE,               -- DID of the goal's first version; NULL: a local-only row
    container_did     TEXT,                      -- the shown version (gmp.view.shown_head)
    author_did        TEXT,                      -- signer of the shown version
    creator_did       TEXT,                      -- signer of the first version
    forks             INTEGER NOT NULL DEFAULT 0,
    audience          TEXT CHECK (audience IN ('participants', 'public')),
    participants      TEXT,                      -- JSON array of DIDs
    parent_goal       TEXT,                      -- lineage id of the parent goal (related.in_reply_to)
    timestamp_ms      INTEGER                    -- head.timestamp of the shown version
);

CREATE TABLE goal_links (
    parent_goal_id  INTEGER NOT NULL REFERENCES goals (id),
    child_goal_id   INTEGER NOT NULL REFERENCES goals (id),
    relation_type   TEXT DEFAULT 'subgoal'
                    CHECK (relation_type IN ('subgoal', 'dependency', 'related')),
    PRIMARY KEY (parent_goal_id, child_goal_id)
);

CREATE TABLE tasks (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    goal_id          INTEGER REFERENCES goals (id),
    name             TEXT NOT NULL,
    description      TEXT,
    tags             TEXT,                       -- JSON array of strings
    status           TEXT DEFAULT 'pending'
                     CHECK (status IN ('pending', 'in_progress', 'paused', 'completed', 'failed', 'abandoned')),
    priority         REAL DEFAULT 0,
    pinned           INTEGER DEFAULT 0,          -- local: 1 = pinned
    created_at       TEXT DEFAULT CURRENT_TIMESTAMP,
    updated_at       TEXT,
    repl_mode        TEXT DEFAULT 'none'         -- local
                     CHECK (repl_mode IN ('none', 'read_only', 'full')),
    repl_status      TEXT DEFAULT 'stopped'      -- local
                     CHECK (repl_status IN ('running', 'stopped', 'error')),
    repl_config      JSON,                       -- local
    llm_id           TEXT,                       -- local
    lineage          TEXT UNIQUE,                -- DID of the task's first version; NULL: a local-only row
    container_did    TEXT,
    author_did       TEXT,
    creator_did      TEXT,
    forks            INTEGER NOT NULL DEFAULT 0,
    goal_lineage     TEXT,
    parent_task      TEXT,                       -- lineage id of the parent task
    depends_on       TEXT,                       -- JSON array of task lineage ids
    assigned_to      TEXT,                       -- JSON array of DIDs
    progress         REAL,
    deadline_ms      INTEGER,
    next_check_ms    INTEGER,
    check_grace_s    INTEGER,
    due_at_ms        INTEGER,
    overdue_at_ms    INTEGER,
    delegation_rule  TEXT,
    reason           TEXT,
    timestamp_ms     INTEGER
);
CREATE INDEX idx_tasks_goal_id ON tasks (goal_id);
CREATE INDEX tasks_by_goal_lineage ON tasks (goal_lineage);
-- `task due` is a range scan over the open rows (gmp.md section 9)
CREATE INDEX tasks_open_by_overdue ON tasks (overdue_at_ms)
    WHERE status IN ('pending', 'in_progress', 'paused');
CREATE INDEX tasks_open_by_due ON tasks (due_at_ms)
    WHERE status IN ('pending', 'in_progress', 'paused');

INSERT INTO goals (id, name, description, tags, status, priority, constraints, success_criteria,
                   created_at, updated_at, llm_id)
    SELECT id, name, description, tags, status,
           CASE priority WHEN 'low' THEN 0.25 WHEN 'high' THEN 0.75 ELSE 0.5 END,
           constraints, success_criteria, created_at, updated_at, llm_id FROM goals_v1;
INSERT INTO goal_links (parent_goal_id, child_goal_id, relation_type)
    SELECT parent_goal_id, child_goal_id, relation_type FROM goal_links_v1;
INSERT INTO tasks (id, goal_id, name, description, tags, status, priority, pinned, created_at, updated_at,
                   repl_mode, repl_status, repl_config, llm_id)
    SELECT id, goal_id, name, description, tags,
           CASE status WHEN 'open' THEN 'pending' WHEN 'done' THEN 'completed' WHEN 'frozen' THEN 'paused'
                       ELSE COALESCE(status, 'pending') END,
           priority, pinned, created_at, updated_at, repl_mode, repl_status, repl_config, llm_id FROM tasks_v1;
-- the dropped tables' counters went with them; never hand out an id again
INSERT INTO sqlite_sequence (name, seq)
    SELECT name, seq FROM gmp_seq_v1 WHERE name NOT IN (SELECT name FROM sqlite_sequence);
UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT s.seq FROM gmp_seq_v1 s WHERE s.name = sqlite_sequence.name))
    WHERE name IN (SELECT name FROM gmp_seq_v1);
DROP TABLE goals_v1;
DROP TABLE goal_links_v1;
DROP TABLE tasks_v1;
DROP TABLE gmp_seq_v1;

-- Who held a task and why it moved (gmp.md section 8), along the path to the shown head.
CREATE TABLE task_holders (
    lineage       TEXT NOT NULL,
    assignee      TEXT NOT NULL,
    from_version  TEXT NOT NULL,                 -- the version that assigned it
    to_version    TEXT,                          -- the version that removed it; NULL: still holds
    since_ms      INTEGER,
    until_ms      INTEGER,
    ended         TEXT,                          -- released, reassigned_dead, ..., completed; NULL: holds
    PRIMARY KEY (lineage, assignee, from_version)
);
CREATE INDEX task_holders_by_assignee ON task_holders (assignee);

-- One row per admitted workflow_entry 1.1, counted or not and why (gmp.md section 4.3).
CREATE TABLE gmp_entries (
    did           TEXT PRIMARY KEY,
    lineage       TEXT NOT NULL,                 -- the task (or goal) lineage it is about
    kind          TEXT NOT NULL,                 -- entry_type
    signer        TEXT NOT NULL,
    counted       INTEGER NOT NULL DEFAULT 0,
    reason        TEXT,                          -- why not counted
    task_version  TEXT,
    progress      REAL,
    offer         TEXT,                          -- DID an acceptance/refusal/receipt names
    candidates    TEXT,                          -- JSON array (delegation)
    expires_ms    INTEGER,                       -- delegation expires_at
    timestamp_ms  INTEGER NOT NULL,
    summary       TEXT
);
CREATE INDEX gmp_entries_by_lineage ON gmp_entries (lineage, timestamp_ms);
CREATE INDEX gmp_entries_by_offer ON gmp_entries (offer);
CREATE INDEX gmp_entries_by_expiry ON gmp_entries (kind, expires_ms);

-- Containers whose admission waits for named containers not held yet (gmp.md section 4.1).
CREATE TABLE gmp_pending (
    did             TEXT PRIMARY KEY,
    core            BLOB NOT NULL,
    side            BLOB,
    author          TEXT NOT NULL,
    received_from   TEXT,
    received_at_ms  INTEGER NOT NULL,
    missing         TEXT NOT NULL                 -- JSON array of DIDs
);
CREATE INDEX gmp_pending_by_author ON gmp_pending (author);
CREATE INDEX gmp_pending_by_age ON gmp_pending (received_at_ms);

CREATE TABLE gmp_pending_missing (
    did          TEXT NOT NULL REFERENCES gmp_pending (did) ON DELETE CASCADE,
    missing_did  TEXT NOT NULL,
    PRIMARY KEY (did, missing_did)
);
CREATE INDEX gmp_pending_missing_by_missing ON gmp_pending_missing (missing_did);

-- Who is given a goal and everything under it (gmp.md section 7).
CREATE TABLE gmp_audience (
    goal_lineage  TEXT NOT NULL,
    did           TEXT NOT NULL,
    PRIMARY KEY (goal_lineage, did)
);
CREATE INDEX gmp_audience_by_did ON gmp_audience (did);

-- Every DID ever in assigned_to of a task version under the goal (the audience only grows by them).
CREATE TABLE gmp_assignees (
    goal_lineage  TEXT NOT NULL,
    did           TEXT NOT NULL,
    PRIMARY KEY (goal_lineage, did)
);

-- The newest head.timestamp among a goal's containers: the time offers' expiry is judged against.
CREATE TABLE gmp_goal_clock (
    goal_lineage  TEXT PRIMARY KEY,
    newest_ms     INTEGER NOT NULL
);

-- Every admitted GMP container and the goal it belongs to.
CREATE TABLE gmp_members (
    did           TEXT PRIMARY KEY,
    goal_lineage  TEXT NOT NULL
);
CREATE INDEX gmp_members_by_goal ON gmp_members (goal_lineage);

CREATE VIEW tag_usage AS
WITH tagged (source_table, source_id, tags, seen_at) AS (
              SELECT 'diary_entries',         id, tags, timestamp     FROM diary_entries
    UNION ALL SELECT 'concepts',              id, tags, timestamp     FROM concepts
    UNION ALL SELECT 'links',                 id, tags, timestamp     FROM links
    UNION ALL SELECT 'goals',                 id, tags, created_at    FROM goals
    UNION ALL SELECT 'tasks',                 id, tags, created_at    FROM tasks
    UNION ALL SELECT 'notes',                 id, tags, timestamp     FROM notes
    UNION ALL SELECT 'llm_memory',            id, tags, created_at    FROM llm_memory
    UNION ALL SELECT 'llm_recent_responses',  id, tags, timestamp     FROM llm_recent_responses
    UNION ALL SELECT 'abstracts',             id, tags, updated_at    FROM abstracts
    UNION ALL SELECT 'process_log',           id, tags, timestamp     FROM process_log
    UNION ALL SELECT 'agent_scripts',         id, tags, created_at    FROM agent_scripts
    UNION ALL SELECT 'agent_peers',           id, tags, registered_at FROM agent_peers
    UNION ALL SELECT 'thinking_methods',      id, tags, NULL          FROM thinking_methods
    UNION ALL SELECT 'stagnation_strategies', id, tags, NULL          FROM stagnation_strategies
),
exploded (source_table, source_id, seen_at, tag) AS (
    SELECT t.source_table, t.source_id, t.seen_at, TRIM(j.value)
      FROM tagged AS t,
           json_each(CASE WHEN json_valid(t.tags)
                          THEN CASE WHEN json_type(t.tags) = 'array' THEN t.tags END
                     END) AS j
     WHERE j.type = 'text'
)
SELECT e.tag                                                 AS tag,
       COUNT(DISTINCT e.source_table || ':' || e.source_id)  AS usage_count,
       MIN(e.seen_at)                                        AS first_used,
       MAX(e.seen_at)                                        AS last_used,
       GROUP_CONCAT(DISTINCT e.source_table)                 AS sources
  FROM exploded AS e
 WHERE e.tag <> ''
 GROUP BY e.tag
 ORDER BY usage_count DESC, e.tag;
