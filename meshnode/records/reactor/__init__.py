"""The reactor's records: the words its rows are kept in, the leases and status moves of a wake
job's run, the last scan, and the reads the CLI, the web and the app show (audit). The core's
state in rows (load a state, write a step) stays with the reactor (reactor.persist): it speaks
the core's types."""
