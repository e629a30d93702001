-- Who the person blocked from the agent's A2A face (meshnode a2a block): a party by its name (a known
-- party's token name, or the sender an unknown party claims, or an unknown party's key), or an
-- address or network (stored as a network: 192.0.2.7/32, 203.0.113.0/24, 2001:db8::/48). A blocked
-- request is refused with HTTP 403 before anything else is done for it.

CREATE TABLE a2a_blocks (
    target      TEXT PRIMARY KEY,
    kind        TEXT NOT NULL CHECK (kind IN ('party', 'address')),
    created_ms  INTEGER NOT NULL,
    decided_by  TEXT NOT NULL
) WITHOUT ROWID;
