CREATE TABLE children (
    did            TEXT PRIMARY KEY,
    peer_id        TEXT NOT NULL,
    name           TEXT NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('clone', 'trained', 'newborn')),
    depth          INTEGER NOT NULL,                 -- the child's depth (a root is 0, its child 1)
    home           TEXT,                             -- NULL for a child on another host
    host           TEXT NOT NULL DEFAULT 'local',    -- 'local', or what the bundle's hello told
    listen_port    INTEGER,
    web_port       INTEGER,
    autostart      TEXT NOT NULL CHECK (autostart IN ('systemd-user', 'systemd-system', 'script', 'none')),
    state          TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'removed')),
    invitation_id  TEXT,
    addresses      TEXT NOT NULL DEFAULT '[]',       -- JSON list of multiaddrs
    seed_report    TEXT NOT NULL DEFAULT '{}',       -- JSON: SeedReport.to_dict()
    created_ms     INTEGER NOT NULL,
    removed_ms     INTEGER
);
CREATE TABLE spawn_invitations (
    id           TEXT PRIMARY KEY,      -- 32 hex digits (128 random bits)
    container    TEXT NOT NULL,         -- the signed invitation's container DID
    kind         TEXT NOT NULL,
    name         TEXT NOT NULL,
    depth        INTEGER NOT NULL,
    bundle_hash  TEXT NOT NULL,         -- hex SHA-256 of the bundle's seed.db
    created_ms   INTEGER NOT NULL,
    expires_ms   INTEGER NOT NULL,
    used_by_did  TEXT,                  -- set once, in the transaction that inserts the child
    used_ms      INTEGER
);
CREATE TABLE spawn_origin (              -- one row at most, in a child's store
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    parent_did     TEXT NOT NULL,
    parent_name    TEXT NOT NULL,
    kind           TEXT NOT NULL,
    depth          INTEGER NOT NULL,     -- this node's depth (1 for a child of a root)
    invitation_id  TEXT,                 -- bundle children only
    invitation     BLOB,                 -- the signed invitation container bytes (bundle children)
    hello_state    TEXT NOT NULL DEFAULT 'none' CHECK (hello_state IN ('none', 'pending', 'accepted', 'refused')),
    hello_reason   TEXT,
    created_ms     INTEGER NOT NULL
);
