-- The action gate's file changes (seed 004; meshnode/gate/drafts.py and
-- snapshots.py). Paths are the jail's keys (Jail.resolve): relative to the
-- workspace, absolute for files in another allowed root.

-- Snapshots: the contents of the files a commit or a rollback was about to
-- change, taken just before, and the agent state of that moment. Restoring a
-- snapshot takes a new one first, so a rollback can itself be rolled back.
CREATE TABLE gate_snapshots (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    created_ms     INTEGER NOT NULL,              -- ms since the epoch
    reason         TEXT NOT NULL,                 -- why it was taken, for a person
    state          TEXT NOT NULL DEFAULT '{}',    -- JSON object: the agent's state (e.g. the session's drafts)
    restored_from  INTEGER REFERENCES gate_snapshots (id)  -- set when taken by a rollback to that snapshot
);

CREATE TABLE gate_snapshot_files (
    snapshot_id  INTEGER NOT NULL REFERENCES gate_snapshots (id) ON DELETE CASCADE,
    path         TEXT NOT NULL,
    content      BLOB,                            -- NULL: the file did not exist
    sha256       TEXT,                            -- hex of content; NULL when absent
    PRIMARY KEY (snapshot_id, path)
);

-- Drafts: changes the agent proposed, seen by its later reads in the same
-- session, written to the real files only by a commit of the accepted ones.
CREATE TABLE gate_drafts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session      TEXT NOT NULL,
    path         TEXT NOT NULL,
    base_hash    TEXT,                            -- sha256 hex of the real file when first drafted; NULL: absent
    content      BLOB,                            -- the new content; NULL: the draft deletes the file
    status       TEXT NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'accepted', 'rejected', 'committed')),
    created_ms   INTEGER NOT NULL,
    updated_ms   INTEGER NOT NULL,
    snapshot_id  INTEGER REFERENCES gate_snapshots (id)  -- the snapshot its commit took
);

-- One open draft per file and session; committed ones stay as history.
CREATE UNIQUE INDEX gate_drafts_open ON gate_drafts (session, path) WHERE status != 'committed';
