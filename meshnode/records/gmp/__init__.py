"""GMP on the store: its service (goals and tasks as the node runs them), reads, reactions, what it
publishes, and the admission and view hooks it registers with the store."""
