-- The hop limit of CogSync knowledge (payload.forward of a diary entry,
-- concept or link; protocols/cogsync.md 1.2), one row per container that
-- sets one. No row: no limit, the knowledge travels friend to friend.

CREATE TABLE container_forward (
    did      TEXT PRIMARY KEY REFERENCES containers (did) ON DELETE CASCADE,
    forward  INTEGER NOT NULL               -- hops past the author's friends: 0 or 1
) WITHOUT ROWID;

