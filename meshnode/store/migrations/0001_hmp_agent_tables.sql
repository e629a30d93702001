-- 0001: the HMP agent tables.
--
-- WHAT THIS IS
--   A from-scratch re-creation of the local database of the HMP reference
--   agent (experimental/v1_agent_attempt/tools/db_structure.sql, as described
--   in section 4 of the HMP digest): its 34 tables (the digest's "35 tables"
--   also counts SQLite's own sqlite_sequence, which AUTOINCREMENT creates),
--   4 views, 3 triggers and the 2 indexes on unverified_facts, with the known
--   defects of the reference file fixed. Column names, declared types and
--   defaults follow the digest; declared types such as JSON, BOOLEAN,
--   DATETIME and TIMESTAMP are kept as written (SQLite gives them NUMERIC
--   affinity, which leaves JSON arrays/objects and CURRENT_TIMESTAMP text
--   untouched).
--
--   The migration runner (meshnode/store/migrate.py) applies this file once,
--   inside its own transaction, with PRAGMA foreign_keys=ON; that is why the
--   file has no BEGIN/COMMIT, no PRAGMA, and uses plain CREATE statements
--   (no IF NOT EXISTS, no DROP ... IF EXISTS).
--
-- CONVENTION: every column named `tags` holds a JSON array of strings, e.g.
--   '["idea","mesh"]'. NULL means "no tags". Anything else (a comma list,
--   an object, invalid JSON) is stored as given but ignored by tag_usage.
--
-- DEVIATIONS FROM THE REFERENCE SCHEMA, AND WHY
--   1. llm_recent_responses: the missing comma after `self_validation` is
--      restored. In the reference file it is a syntax error that aborts the
--      whole script, so every table after llm_memory was never created.
--   2. identity: the `privkey` column is dropped. Private keys never live in
--      the database; meshnode keeps them in its key file (meshnode/identity).
--   3. agent_reputation.agent_id is TEXT (was INTEGER), matching the TEXT key
--      agent_peers.id it references.
--   4. unverified_facts.resolution_json defaults to the valid JSON text
--      '{"status":"pending"}' (the reference default was the backtick-quoted
--      identifier `pending`, stored as the literal text "pending" and not JSON).
--   5. ethics_cases: the only CREATE TABLE without IF NOT EXISTS in the
--      reference. Here every statement is a plain CREATE, consistently, since
--      the runner applies the file exactly once.
--   6. Value lists the reference only documented in comments are enforced as
--      CHECK constraints (NULL stays allowed where the column is nullable):
--      goals.status/priority, goal_links.relation_type, tasks.status/
--      repl_mode/repl_status, unverified_facts.status, ethics_cases.verdict,
--      agent_peers.status/source, agent_reputation.trust_level, notes.source,
--      process_log.status, ratings.target_type. agent_peers.status also
--      accepts 'unknown', its default, which the documented list omits.
--   7. goal_links.parent_goal_id/child_goal_id are declared as foreign keys
--      to goals(id) (the digest's column listing shows no arrow for them; the
--      columns can only mean goals).
--   8. tag_usage is rewritten: the reference view failed with "ambiguous
--      column name: id" (json_each also has an `id` column), read `timestamp`
--      from goals and tasks, which have none, and split tags on commas. Here
--      it reads the JSON arrays with json_each, skips NULL / invalid /
--      non-array tags and non-string elements, uses created_at (or
--      updated_at / registered_at) where a table has no `timestamp`, and
--      covers every table that has a `tags` column.
--   9. validation_stats is rewritten: the reference view failed with "no such
--      column: v" (it applied ->> to the json_each alias) and read a
--      non-existent r.updated_at. Here it uses json_extract(value, '$.rating')
--      over validators shaped {"validator","rating","trust","comment"};
--      response_time is NULL (see the view).
--  10. The reputation triggers also recompute the OLD target when a rating
--      is moved to another target by UPDATE (the reference only recomputed
--      NEW), and reputation falls back to 0 when no ratings remain.
--  11. Extra indexes for common lookups: notes(timestamp),
--      diary_entries(timestamp), tasks(goal_id), process_log(timestamp),
--      ratings(target_type, target_id) (used by the triggers and
--      rated_entities) and attachments(message_id) (cascade deletes).
--
-- Not changed on purpose: columns that merely point at other rows without a
-- declared foreign key in the reference (unverified_facts.context_msg_id and
-- assigned_task_id, notes.task_id, diary_graph_index.*_entry_id,
-- ratings.target_id) stay plain columns. `notes` keeps exactly the listed
-- columns; migration 0002 adds meshnode's own columns to it.


-- ===========================================================================
-- Cognitive memory
-- ===========================================================================

-- Diary: thoughts, observations, recollections.
CREATE TABLE diary_entries (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    text          TEXT NOT NULL,
    tags          TEXT,                          -- JSON array of strings
    concept_refs  TEXT,
    rating        REAL DEFAULT NULL,             -- usefulness / reliability
    priority      INTEGER DEFAULT 0,             -- 0 normal, >0 important
    archive       INTEGER DEFAULT 0,             -- 0 active, 1 archived
    timestamp     TEXT DEFAULT CURRENT_TIMESTAMP,
    llm_id        TEXT
);

-- Concepts (notions, entities, ideas).
CREATE TABLE concepts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT NOT NULL UNIQUE,
    description   TEXT,
    tags          TEXT,                          -- JSON array of strings
    timestamp     TEXT DEFAULT CURRENT_TIMESTAMP,
    llm_id        TEXT
);

-- Semantic relations between concepts.
CREATE TABLE links (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    from_concept_id  INTEGER REFERENCES concepts (id),
    to_concept_id    INTEGER REFERENCES concepts (id),
    relation_type    TEXT,                       -- e.g. is_a, causes, related_to
    tags             TEXT,                       -- JSON array of strings
    timestamp        TEXT DEFAULT CURRENT_TIMESTAMP,
    llm_id           TEXT
);

-- Relations between diary entries (a semantic map of the diary).
CREATE TABLE diary_graph_index (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    source_entry_id  INTEGER NOT NULL,
    target_entry_id  INTEGER NOT NULL,
    relation         TEXT NOT NULL,              -- e.g. refers_to, contradicts
    strength         REAL DEFAULT 1.0,           -- 0..1
    context          TEXT,
    timestamp        TEXT DEFAULT CURRENT_TIMESTAMP
);

-- Topic summaries.
CREATE TABLE abstracts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    title       TEXT,
    summary     TEXT,
    tags        JSON,                            -- JSON array of strings
    sources     JSON,                            -- JSON array of source row ids
    updated_at  TEXT DEFAULT CURRENT_TIMESTAMP,
    llm_id      TEXT
);

-- Long-term LLM memory.
CREATE TABLE llm_memory (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    title       TEXT,
    content     TEXT NOT NULL,
    tags        TEXT,                            -- JSON array of strings
    created_at  DATETIME DEFAULT CURRENT_TIMESTAMP,
    updated_at  DATETIME DEFAULT CURRENT_TIMESTAMP,
    llm_id      TEXT
);

-- ===========================================================================
-- Goals and tasks (before llm_recent_responses, which references tasks)
-- ===========================================================================

CREATE TABLE goals (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    name              TEXT NOT NULL,
    description       TEXT,
    tags              TEXT,                      -- JSON array of strings
    status            TEXT DEFAULT 'active'
                      CHECK (status IN ('active', 'paused', 'completed', 'failed')),
    priority          TEXT DEFAULT 'normal'
                      CHECK (priority IN ('low', 'normal', 'high')),
    constraints       TEXT,                      -- JSON array
    success_criteria  TEXT,                      -- JSON array
    created_at        TEXT DEFAULT CURRENT_TIMESTAMP,
    updated_at        TEXT,
    llm_id            TEXT
);

CREATE TABLE goal_links (
    parent_goal_id  INTEGER NOT NULL REFERENCES goals (id),
    child_goal_id   INTEGER NOT NULL REFERENCES goals (id),
    relation_type   TEXT DEFAULT 'subgoal'
                    CHECK (relation_type IN ('subgoal', 'dependency', 'related')),
    PRIMARY KEY (parent_goal_id, child_goal_id)
);

CREATE TABLE tasks (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    goal_id      INTEGER REFERENCES goals (id),
    name         TEXT NOT NULL,
    description  TEXT,
    tags         TEXT,                           -- JSON array of strings
    status       TEXT DEFAULT 'open'
                 CHECK (status IN ('open', 'in_progress', 'done', 'frozen')),
    priority     INTEGER DEFAULT 0,
    pinned       INTEGER DEFAULT 0,              -- 1 = pinned
    created_at   TEXT DEFAULT CURRENT_TIMESTAMP,
    updated_at   TEXT,
    repl_mode    TEXT DEFAULT 'none'
                 CHECK (repl_mode IN ('none', 'read_only', 'full')),
    repl_status  TEXT DEFAULT 'stopped'
                 CHECK (repl_status IN ('running', 'stopped', 'error')),
    repl_config  JSON,                           -- settings of the task's REPL loop
    llm_id       TEXT
);

-- ===========================================================================
-- Short-term memory, validation, fact checking, anti-stagnation
-- ===========================================================================

-- Dialogue history with reflection, tags and per-tick validation.
-- Fix 1: the comma after self_validation is present.
CREATE TABLE llm_recent_responses (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    timestamp              DATETIME DEFAULT CURRENT_TIMESTAMP,
    role                   TEXT CHECK (role IN ('user', 'assistant')) NOT NULL,
    content                TEXT NOT NULL,
    llm_id                 TEXT,
    task_id                INTEGER REFERENCES tasks (id),
    confidence             REAL DEFAULT NULL,    -- self-assessed, 0..1
    unverified_facts_json  TEXT DEFAULT '[]',
    reflection             TEXT,
    novelty_score          REAL,
    new_ideas              JSON,
    refined_ideas          TEXT,
    discarded_ideas        JSON,
    tags                   JSON,                 -- JSON array of strings
    emotions               JSON,
    auto_pass              BOOLEAN DEFAULT 0,    -- validation skipped (no validators)
    self_validation        BOOLEAN DEFAULT 0,    -- the main LLM was its own validator
    rating                 REAL,                 -- final (weighted) rating
    distribution           JSON,                 -- vote histogram, e.g. {"-1":1,"0":2}
    validators             JSON                  -- JSON array of
                                                 -- {"validator","rating","trust","comment"}
);

-- Claims awaiting a fact check.
CREATE TABLE unverified_facts (
    id                TEXT PRIMARY KEY,          -- uuid or readable id
    context_msg_id    INTEGER,                   -- llm_recent_responses.id, if any
    claim             TEXT NOT NULL,
    context_snippet   TEXT,
    confidence        REAL,
    sources_json      TEXT,
    why_unverified    TEXT,
    status            TEXT DEFAULT 'open'
                      CHECK (status IN ('open', 'pending', 'verified', 'rejected')),
    assigned_task_id  INTEGER,                   -- tasks.id of the fact-check task, if any
    checker_agent     TEXT,
    resolution_json   TEXT DEFAULT '{"status":"pending"}',   -- fix 4
    created_at        DATETIME DEFAULT CURRENT_TIMESTAMP,
    last_checked_at   DATETIME
);

CREATE INDEX idx_unverified_facts_status ON unverified_facts (status);
CREATE INDEX idx_unverified_facts_context ON unverified_facts (context_msg_id);

-- Anti-stagnation metrics, one row per REPL tick.
CREATE TABLE anti_stagnation_metrics (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    tick_id          TEXT NOT NULL,
    novelty_score    REAL DEFAULT 0,
    new_ideas        INTEGER DEFAULT 0,
    refined_ideas    INTEGER DEFAULT 0,
    discarded_ideas  INTEGER DEFAULT 0,
    emotions_json    TEXT,
    created_at       DATETIME DEFAULT CURRENT_TIMESTAMP
);

-- ===========================================================================
-- Ethics and prompts
-- ===========================================================================

CREATE TABLE system_prompts (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    type        TEXT CHECK (type IN ('full', 'short')),
    version     TEXT,
    source      TEXT CHECK (source IN ('local', 'mesh', 'mixed')),
    content     TEXT NOT NULL,
    updated_at  TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE ethics_policies (
    id                     TEXT PRIMARY KEY,
    version                TEXT,
    source                 TEXT CHECK (source IN ('local', 'mesh', 'mixed')),
    sync_enabled           BOOLEAN,
    mesh_endpoint          TEXT,
    consensus_threshold    REAL,
    check_interval         TEXT,                 -- e.g. '12h'
    model_type             TEXT,
    model_weights_json     TEXT,
    principles_json        TEXT,
    evaluation_json        TEXT,
    violation_policy_json  TEXT,
    audit_json             TEXT,
    updated_at             TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);

-- Ethical precedents (only exceptional situations are recorded).
-- Fix 5: created like every other table here.
CREATE TABLE ethics_cases (
    case_id                INTEGER PRIMARY KEY AUTOINCREMENT,
    thought_id             INTEGER REFERENCES diary_entries (id)
                           ON DELETE SET NULL ON UPDATE CASCADE,
    verdict                TEXT CHECK (verdict IN ('ok', 'warning', 'violation')),
    reason                 TEXT,
    suggested_alternative  TEXT,
    created_at             TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    synced                 BOOLEAN DEFAULT 0     -- already published to the mesh
);

-- ===========================================================================
-- Peers, reputation, identity, configuration
-- ===========================================================================

CREATE TABLE agent_peers (
    id             TEXT PRIMARY KEY,
    name           TEXT,
    addresses      TEXT,                         -- JSON list of {addr, nonce, pow_hash, datetime}
    tags           TEXT,                         -- JSON array of strings
    status         TEXT DEFAULT 'unknown'
                   CHECK (status IN ('unknown', 'online', 'offline', 'untrusted', 'blacklisted')),
    source         TEXT CHECK (source IN ('bootstrap', 'discovery', 'exchange')),
    last_seen      DATETIME,
    description    TEXT,
    capabilities   TEXT,                         -- JSON
    pubkey         TEXT,
    heard_from     TEXT,                         -- JSON list of DIDs
    software_info  TEXT,                         -- JSON
    registered_at  DATETIME DEFAULT CURRENT_TIMESTAMP
);

-- Fix 3: agent_id is TEXT, like the agent_peers.id it references.
CREATE TABLE agent_reputation (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id          TEXT NOT NULL REFERENCES agent_peers (id),
    identity          TEXT,
    reputation_score  REAL DEFAULT 0.0,
    trust_level       TEXT CHECK (trust_level IN ('high', 'medium', 'low')),
    notes             TEXT,
    last_interaction  TEXT
);

-- Local identities of this agent.
-- Fix 2: no privkey column; private keys never live in the database.
CREATE TABLE identity (
    id          TEXT PRIMARY KEY,
    name        TEXT,
    pubkey      TEXT,
    metadata    TEXT,
    created_at  TEXT,
    updated_at  TEXT
);

-- Agent configuration; values are JSON-encoded.
CREATE TABLE config (
    key    TEXT PRIMARY KEY,
    value  TEXT
);

-- LLMs known to the agent, local or remote.
CREATE TABLE llm_registry (
    id             TEXT PRIMARY KEY,
    name           TEXT,
    description    TEXT,
    config_json    TEXT,
    is_validator   BOOLEAN DEFAULT 0,
    trust_score    REAL DEFAULT 1.0,             -- validator vote weight
    registered_at  DATETIME DEFAULT CURRENT_TIMESTAMP
);

-- ===========================================================================
-- User notebook / chat
-- ===========================================================================

-- When a note is forwarded to other chats, tags, llm_id and hidden are not
-- sent and read is reset to 0. Exactly the reference columns: migration 0002
-- adds meshnode's own.
CREATE TABLE notes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    topic      TEXT,
    text       TEXT NOT NULL,
    code       TEXT,
    tags       TEXT,                             -- JSON array of strings
    mentions   TEXT DEFAULT '[]',                -- JSON array of DIDs
    hashtags   TEXT DEFAULT '[]',                -- JSON array of user hashtags
    user_did   TEXT DEFAULT 'ALL',
    agent_did  TEXT,                             -- also the chat id
    source     TEXT DEFAULT 'user'
               CHECK (source IN ('user', 'cli', 'llm', 'llm:task', 'system')),
    task_id    INTEGER,                          -- set when source = 'llm:task'
    links      TEXT DEFAULT '',
    read       INTEGER DEFAULT 0,
    hidden     INTEGER DEFAULT 0,
    priority   INTEGER DEFAULT 0,
    timestamp  TEXT DEFAULT CURRENT_TIMESTAMP,
    llm_id     TEXT
);

CREATE TABLE attachments (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id  INTEGER NOT NULL REFERENCES notes (id) ON DELETE CASCADE,
    filename    TEXT,
    mime_type   TEXT,
    size        INTEGER,
    "binary"    BLOB NOT NULL
);

CREATE TABLE users (
    user_id        INTEGER PRIMARY KEY AUTOINCREMENT,
    ban            DATETIME DEFAULT NULL,        -- banned until this time
    username       TEXT,
    badges         TEXT,
    did            TEXT UNIQUE NOT NULL,
    mail           TEXT UNIQUE NOT NULL,
    password_hash  TEXT NOT NULL,
    info           TEXT,                         -- JSON
    profile        TEXT,                         -- JSON
    contacts       TEXT,                         -- JSON array
    language       TEXT,                         -- e.g. 'ru,en'
    "groups"       TEXT DEFAULT '[]',            -- JSON array; quoted: GROUPS is a keyword
    operator       BOOLEAN DEFAULT 0
);

CREATE TABLE users_group (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    group_name   TEXT UNIQUE NOT NULL,
    description  TEXT
);

CREATE TABLE password_reset_tokens (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id     INTEGER NOT NULL REFERENCES users (user_id),
    token       TEXT UNIQUE NOT NULL,
    created_at  DATETIME NOT NULL,
    expires_at  DATETIME NOT NULL,
    used        BOOLEAN DEFAULT 0
);

-- ===========================================================================
-- Process control and logging
-- ===========================================================================

CREATE TABLE process_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL,
    value      TEXT,
    tags       TEXT,                             -- JSON array of strings
    status     TEXT DEFAULT 'ok'
               CHECK (status IN ('ok', 'warning', 'error', 'timeout', 'offline', 'close')),
    priority   INTEGER DEFAULT 0,
    timestamp  TEXT DEFAULT CURRENT_TIMESTAMP,
    llm_id     TEXT
);

CREATE TABLE main_process (
    name       TEXT PRIMARY KEY,
    heartbeat  TEXT,                             -- ISO time of the last ping
    stop       INTEGER DEFAULT 0                 -- 1 = the process must exit
);

-- ===========================================================================
-- Agent extensibility, external services, methods and ratings
-- ===========================================================================

CREATE TABLE agent_tables (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    table_name   TEXT NOT NULL UNIQUE,
    description  TEXT,
    schema       TEXT NOT NULL,                  -- the table's SQL
    created_at   DATETIME DEFAULT CURRENT_TIMESTAMP,
    llm_id       TEXT
);

CREATE TABLE agent_scripts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    name         TEXT NOT NULL,
    version      TEXT NOT NULL,
    code         TEXT NOT NULL,
    language     TEXT DEFAULT 'python',
    description  TEXT,
    tags         TEXT,                           -- JSON array of strings
    created_at   DATETIME DEFAULT CURRENT_TIMESTAMP,
    updated_at   DATETIME DEFAULT CURRENT_TIMESTAMP,
    llm_id       TEXT,
    UNIQUE (name, version)
);

CREATE TABLE external_services (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    name             TEXT NOT NULL,
    type             TEXT NOT NULL,              -- blog, forum, social, ...
    base_url         TEXT NOT NULL,
    description      TEXT,
    active           BOOLEAN DEFAULT true,
    inactive_reason  TEXT
);

CREATE TABLE external_accounts (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    service_id       INTEGER NOT NULL REFERENCES external_services (id) ON DELETE CASCADE,
    login            TEXT NOT NULL,
    password         TEXT NOT NULL,              -- password or token
    purpose          TEXT,
    active           BOOLEAN DEFAULT true,
    inactive_reason  TEXT
);

-- Ways out of cognitive stagnation.
CREATE TABLE stagnation_strategies (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    name             TEXT NOT NULL,
    description      TEXT NOT NULL,
    source           TEXT,                       -- internal, mesh, user-defined
    tags             TEXT,                       -- JSON array of strings
    reputation       REAL DEFAULT 0,             -- kept = AVG(ratings) by triggers
    active           BOOLEAN DEFAULT true,
    inactive_reason  TEXT
);

CREATE TABLE thinking_methods (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    name             TEXT NOT NULL,
    description      TEXT NOT NULL,
    type             TEXT,
    source           TEXT,                       -- internal, mesh, user-defined
    tags             TEXT,                       -- JSON array of strings
    reputation       REAL DEFAULT 0,             -- kept = AVG(ratings) by triggers
    active           BOOLEAN DEFAULT true,
    inactive_reason  TEXT
);

-- Ratings of thinking methods and stagnation strategies. target_id points
-- into the table chosen by target_type, so it cannot be a foreign key.
CREATE TABLE ratings (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id     TEXT NOT NULL,
    target_type  TEXT NOT NULL
                 CHECK (target_type IN ('thinking_method', 'stagnation_strategy')),
    target_id    INTEGER NOT NULL,
    rating       INTEGER NOT NULL,
    comment      TEXT,
    timestamp    DATETIME DEFAULT CURRENT_TIMESTAMP
);

-- ===========================================================================
-- Extra indexes (fix 11)
-- ===========================================================================

CREATE INDEX idx_notes_timestamp ON notes (timestamp);
CREATE INDEX idx_diary_entries_timestamp ON diary_entries (timestamp);
CREATE INDEX idx_tasks_goal_id ON tasks (goal_id);
CREATE INDEX idx_process_log_timestamp ON process_log (timestamp);
CREATE INDEX idx_ratings_target ON ratings (target_type, target_id);
CREATE INDEX idx_attachments_message_id ON attachments (message_id);

-- ===========================================================================
-- Reputation triggers (fix 10)
--
-- reputation = AVG(rating) over the ratings of that entity, 0 when it has
-- none. Each UPDATE below recomputes, with a correlated subquery, every row
-- the changed rating touched: NEW's target on insert, OLD's on delete, and
-- both on update (a rating may move to another target or type).
-- ===========================================================================

CREATE TRIGGER trg_update_reputation_insert
AFTER INSERT ON ratings
BEGIN
    UPDATE thinking_methods
       SET reputation = COALESCE((SELECT AVG(r.rating) FROM ratings AS r
                                   WHERE r.target_type = 'thinking_method'
                                     AND r.target_id = thinking_methods.id), 0)
     WHERE NEW.target_type = 'thinking_method' AND id = NEW.target_id;

    UPDATE stagnation_strategies
       SET reputation = COALESCE((SELECT AVG(r.rating) FROM ratings AS r
                                   WHERE r.target_type = 'stagnation_strategy'
                                     AND r.target_id = stagnation_strategies.id), 0)
     WHERE NEW.target_type = 'stagnation_strategy' AND id = NEW.target_id;
END;

CREATE TRIGGER trg_update_reputation_update
AFTER UPDATE ON ratings
BEGIN
    UPDATE thinking_methods
       SET reputation = COALESCE((SELECT AVG(r.rating) FROM ratings AS r
                                   WHERE r.target_type = 'thinking_method'
                                     AND r.target_id = thinking_methods.id), 0)
     WHERE (NEW.target_type = 'thinking_method' AND id = NEW.target_id)
        OR (OLD.target_type = 'thinking_method' AND id = OLD.target_id);

    UPDATE stagnation_strategies
       SET reputation = COALESCE((SELECT AVG(r.rating) FROM ratings AS r
                                   WHERE r.target_type = 'stagnation_strategy'
                                     AND r.target_id = stagnation_strategies.id), 0)
     WHERE (NEW.target_type = 'stagnation_strategy' AND id = NEW.target_id)
        OR (OLD.target_type = 'stagnation_strategy' AND id = OLD.target_id);
END;

CREATE TRIGGER trg_update_reputation_delete
AFTER DELETE ON ratings
BEGIN
    UPDATE thinking_methods
       SET reputation = COALESCE((SELECT AVG(r.rating) FROM ratings AS r
                                   WHERE r.target_type = 'thinking_method'
                                     AND r.target_id = thinking_methods.id), 0)
     WHERE OLD.target_type = 'thinking_method' AND id = OLD.target_id;

    UPDATE stagnation_strategies
       SET reputation = COALESCE((SELECT AVG(r.rating) FROM ratings AS r
                                   WHERE r.target_type = 'stagnation_strategy'
                                     AND r.target_id = stagnation_strategies.id), 0)
     WHERE OLD.target_type = 'stagnation_strategy' AND id = OLD.target_id;
END;

-- ===========================================================================
-- Views
-- ===========================================================================

-- Every thinking method and stagnation strategy with its reputation and the
-- number of ratings it has received (0 when none).
CREATE VIEW rated_entities AS
SELECT 'thinking_method'   AS entity_type,
       tm.id               AS entity_id,
       tm.name             AS name,
       tm.description      AS description,
       tm.tags             AS tags,
       tm.reputation       AS reputation,
       (SELECT COUNT(*) FROM ratings AS r
         WHERE r.target_type = 'thinking_method' AND r.target_id = tm.id) AS ratings_count
  FROM thinking_methods AS tm
UNION ALL
SELECT 'stagnation_strategy',
       ss.id,
       ss.name,
       ss.description,
       ss.tags,
       ss.reputation,
       (SELECT COUNT(*) FROM ratings AS r
         WHERE r.target_type = 'stagnation_strategy' AND r.target_id = ss.id)
  FROM stagnation_strategies AS ss;

-- Tag statistics over every table with a `tags` column (fix 8).
--   usage_count  number of rows carrying the tag (a tag repeated inside one
--                row's array counts once)
--   first_used / last_used  MIN / MAX of the row's time column: `timestamp`
--                where the table has one, else created_at (goals, tasks,
--                llm_memory, agent_scripts), updated_at (abstracts),
--                registered_at (agent_peers); thinking_methods and
--                stagnation_strategies have no time column and contribute NULL
--   sources      comma-separated names of the tables the tag appears in
-- Tags are the trimmed string elements of a JSON array; rows whose tags are
-- NULL, not valid JSON or not an array, and non-string or empty elements, are
-- skipped. The nested CASE hands json_each either an array or NULL (no rows),
-- so malformed text can never raise an error.
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

-- Validation metrics per message (fix 9). `validators` is a JSON array of
-- objects {"validator": "<llm id>", "rating": -3..3, "trust": 0..1,
-- "comment": "..."}; elements that are not objects are ignored, and messages
-- without any validator object do not appear.
--   validator_count        number of validator objects
--   avg_rating_unweighted  AVG(rating)
--   avg_rating_weighted    SUM(rating * trust) / SUM(trust), NULL when the
--                          trusts sum to 0. trust is the object's "trust";
--                          when absent, the trust_score of the llm_registry
--                          row whose id is "validator"; else 1.0 (that
--                          column's default). Objects without a rating are
--                          left out of both sums.
--   response_time          always NULL: llm_recent_responses stores only one
--                          time per message (no request or validation time),
--                          so there is nothing to subtract.
--   uncertainty_ratio      share of the validators whose rating is 0
CREATE VIEW validation_stats AS
WITH votes (msg_id, rating, trust) AS (
    SELECT m.id,
           json_extract(v.value, '$.rating'),
           COALESCE(json_extract(v.value, '$.trust'), reg.trust_score, 1.0)
      FROM llm_recent_responses AS m
      JOIN json_each(CASE WHEN json_valid(m.validators)
                          THEN CASE WHEN json_type(m.validators) = 'array' THEN m.validators END
                     END) AS v
      LEFT JOIN llm_registry AS reg ON reg.id = json_extract(v.value, '$.validator')
     WHERE v.type = 'object'
)
SELECT msg_id                                                     AS msg_id,
       COUNT(*)                                                   AS validator_count,
       AVG(rating)                                                AS avg_rating_unweighted,
       TOTAL(rating * trust)
         / NULLIF(TOTAL(CASE WHEN rating IS NOT NULL THEN trust END), 0)
                                                                  AS avg_rating_weighted,
       CAST(NULL AS REAL)                                         AS response_time,
       TOTAL(CASE WHEN rating = 0 THEN 1 ELSE 0 END) / COUNT(*)   AS uncertainty_ratio
  FROM votes
 GROUP BY msg_id;

-- Daily anti-stagnation trend.
CREATE VIEW v_anti_stagnation_trends AS
SELECT date(created_at)      AS day,
       AVG(novelty_score)    AS avg_novelty,
       SUM(new_ideas)        AS total_new_ideas,
       SUM(refined_ideas)    AS total_refined,
       SUM(discarded_ideas)  AS total_discarded
  FROM anti_stagnation_metrics
 GROUP BY date(created_at)
 ORDER BY day;
