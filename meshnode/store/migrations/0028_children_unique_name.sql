-- One active child per name (issue 35, defect 8), whatever process spawns it: two `meshnode spawn
-- --name scout` on a stopped parent are two processes, which no lock inside one process orders; the
-- index makes the second insert fail (records/family.py turns it into name_taken). Removed children
-- keep their names (a name may be given again once its child is removed).
-- A database from before may hold active children sharing a name: the oldest keeps it, each other
-- one becomes <name>-<8 characters of its DID after did:key:z6Mk> (the short id `children list`
-- shows; the name cut to keep within 64 characters), so every child can be named again.
UPDATE children SET name = substr(name, 1, 55) || '-' || substr(did, 13, 8)
 WHERE state = 'active' AND EXISTS (
    SELECT 1 FROM children AS older
     WHERE older.state = 'active' AND older.name = children.name
       AND (older.created_ms < children.created_ms
            OR (older.created_ms = children.created_ms AND older.did < children.did)));
CREATE UNIQUE INDEX children_active_name ON children (name) WHERE state = 'active';
