-- The strangers' pool (issue 36, store/quotas.py; protocols/mesh.md "Storage quotas"): containers of
-- unknown authors that no known author or peer vouches for (forwarded it, points at it, or wrote it)
-- are marked `pooled` when admitted. The pool is this mark over `containers`, not a second store: it
-- is small (`[limits] unknown_pool_*`) and evicts the oldest received first. The mark is set at
-- admission and cleared when a vouch is seen; eviction re-checks every vouch against the known
-- authors of the moment before it removes anything, so a mark left over is never a wrong eviction.
ALTER TABLE containers ADD COLUMN pooled INTEGER NOT NULL DEFAULT 0 CHECK (pooled IN (0, 1));
CREATE INDEX containers_pooled ON containers (received_at_ms, did) WHERE pooled = 1;
-- A database from before: every container that came from the network and whose author and sender
-- are not friends is marked; the first eviction clears the marks of the ones known authors vouch for.
UPDATE containers SET pooled = 1
 WHERE received_from IS NOT NULL
   AND sender_did NOT IN (SELECT p.id FROM agent_peers p, json_each(p.tags)
                           WHERE json_valid(p.tags) AND json_each.value = 'Friend')
   AND received_from NOT IN (SELECT p.id FROM agent_peers p, json_each(p.tags)
                              WHERE json_valid(p.tags) AND json_each.value = 'Friend');
