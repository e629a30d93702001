-- gmp_pending is bounded per sending peer too (store.gmp_admission.MAX_PER_SENDER): authors are
-- free to make, so a per-author bound alone does not stop one peer from filling it.
CREATE INDEX gmp_pending_by_sender ON gmp_pending (received_from);
