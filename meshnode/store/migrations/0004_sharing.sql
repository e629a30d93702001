-- Who may receive a container: head.recipient, one row per recipient DID
-- (a "friends" note names the author's friends when it is written), so any
-- node holding the note forwards it to those DIDs and to no one else.

CREATE TABLE container_recipients (
    did        TEXT NOT NULL REFERENCES containers (did) ON DELETE CASCADE,
    recipient  TEXT NOT NULL,
    PRIMARY KEY (recipient, did)
) WITHOUT ROWID;
