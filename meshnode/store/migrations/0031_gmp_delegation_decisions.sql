-- GMP delegation values decided by MeshConsensus (protocols/gmp.md 6.3 step 3) are found by their
-- (task, version): the node looks for a task version's first decision at each GMP check and at each
-- admission of an assignment under meshconsensus. Without this index every lookup read every decided
-- value (all heights, of every kind). Only well-formed JSON values of that kind are indexed; the
-- lookup (records/gmp/store_admission.first_gmp_delegation) repeats this WHERE to use it.
CREATE INDEX consensus_decisions_gmp_delegation ON consensus_decisions (
    json_extract(CAST(value AS TEXT), '$.task'), json_extract(CAST(value AS TEXT), '$.version'), height, idx)
    WHERE substr(value, 1, 24) = CAST('{"kind":"gmp_delegation"' AS BLOB) AND json_valid(CAST(value AS TEXT));
