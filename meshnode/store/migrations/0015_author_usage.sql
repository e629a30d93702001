-- Storage quotas for unknown authors (store/quotas.py; protocols/mesh.md
-- "Storage quotas"): how much each author holds in `containers`, and the
-- whole store's total, kept by triggers in the same transaction as every
-- insert and delete, so the accounting is always the store's own and needs
-- no rebuild after a restart. Bytes are the stored core and side blocks.

CREATE TABLE author_usage (
    author      TEXT PRIMARY KEY,              -- containers.sender_did
    containers  INTEGER NOT NULL,
    bytes       INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE store_usage (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    containers  INTEGER NOT NULL,
    bytes       INTEGER NOT NULL
);

INSERT INTO author_usage (author, containers, bytes)
    SELECT sender_did, count(*), sum(length(core) + COALESCE(length(side), 0)) FROM containers GROUP BY sender_did;
INSERT INTO store_usage (id, containers, bytes)
    SELECT 1, count(*), COALESCE(sum(length(core) + COALESCE(length(side), 0)), 0) FROM containers;

CREATE TRIGGER containers_usage_insert AFTER INSERT ON containers BEGIN
    INSERT INTO author_usage (author, containers, bytes)
        VALUES (NEW.sender_did, 1, length(NEW.core) + COALESCE(length(NEW.side), 0))
        ON CONFLICT (author) DO UPDATE SET containers = containers + 1, bytes = bytes + excluded.bytes;
    UPDATE store_usage SET containers = containers + 1,
        bytes = bytes + length(NEW.core) + COALESCE(length(NEW.side), 0) WHERE id = 1;
END;

CREATE TRIGGER containers_usage_delete AFTER DELETE ON containers BEGIN
    UPDATE author_usage SET containers = containers - 1,
        bytes = bytes - length(OLD.core) - COALESCE(length(OLD.side), 0) WHERE author = OLD.sender_did;
    DELETE FROM author_usage WHERE author = OLD.sender_did AND containers <= 0;
    UPDATE store_usage SET containers = containers - 1,
        bytes = bytes - length(OLD.core) - COALESCE(length(OLD.side), 0) WHERE id = 1;
END;

-- eviction takes an unknown author's oldest arrivals first
CREATE INDEX containers_by_sender_received ON containers (sender_did, received_at_ms);
