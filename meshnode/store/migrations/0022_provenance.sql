-- Who asked for each container this node wrote (meshnode.app.actor): the person through a face,
-- the agent, an A2A party, a peer, or the node itself; and who approved it, when a person's
-- confirmation carried it out. Local only: never signed, never synced. A container with no row
-- here was written by its author elsewhere (a peer), or by this node before it kept this table
-- and is none of the backfilled kinds below.

CREATE TABLE provenance (
    container_did   TEXT PRIMARY KEY REFERENCES containers (did) ON DELETE CASCADE,
    kind            TEXT NOT NULL CHECK (kind IN ('person', 'agent', 'a2a', 'peer', 'node')),
    via             TEXT,              -- person: cli, web, mcp; agent: cycle, task; node: which part
    actor_id        TEXT,              -- an A2A party's key id, a peer's DID
    label           TEXT,              -- a name to show
    approved_kind   TEXT CHECK (approved_kind IS NULL OR approved_kind IN ('person', 'node')),
    approved_via    TEXT,
    recorded_at_ms  INTEGER NOT NULL,
    backfilled      INTEGER NOT NULL DEFAULT 0 CHECK (backfilled IN (0, 1))
) WITHOUT ROWID;

-- The notes this node wrote before: their signed source says who (cli, user: the person through
-- a face not recorded; llm: the agent; llm:task: an auxiliary loop; system: the node).
INSERT INTO provenance (container_did, kind, via, recorded_at_ms, backfilled)
    SELECT n.container_did,
           CASE n.source WHEN 'llm' THEN 'agent' WHEN 'llm:task' THEN 'agent' WHEN 'system' THEN 'node'
                ELSE 'person' END,
           CASE n.source WHEN 'cli' THEN 'cli' WHEN 'llm' THEN 'cycle' WHEN 'llm:task' THEN 'task' ELSE NULL END,
           c.received_at_ms, 1
    FROM notes n JOIN containers c ON c.did = n.container_did
    WHERE c.sender_did IN (SELECT id FROM identity);

-- Everything else this node signed before: the node, asking for itself as far as anyone knows.
INSERT INTO provenance (container_did, kind, via, recorded_at_ms, backfilled)
    SELECT c.did, 'node', 'earlier', c.received_at_ms, 1 FROM containers c
    WHERE c.sender_did IN (SELECT id FROM identity)
      AND NOT EXISTS (SELECT 1 FROM provenance p WHERE p.container_did = c.did);
