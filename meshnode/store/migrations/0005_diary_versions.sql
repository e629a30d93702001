-- CogSync diary entries as a view of diary_entry containers: one row per
-- lineage (a first version and everything that descends from it through
-- related.previous_version), showing the version the documented rule picks
-- (meshnode/sync/versions.py). Every version stays in `containers`.

ALTER TABLE diary_entries ADD COLUMN container_did TEXT;   -- the version shown
ALTER TABLE diary_entries ADD COLUMN lineage TEXT;         -- DID of the lineage's first version
ALTER TABLE diary_entries ADD COLUMN author_did TEXT;
ALTER TABLE diary_entries ADD COLUMN forks INTEGER NOT NULL DEFAULT 0;  -- concurrent heads beside the shown one
CREATE UNIQUE INDEX diary_entries_by_lineage ON diary_entries (lineage);
