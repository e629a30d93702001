"""The handlers of the cognitive core's store-side commands, one module per concern (their types are in
``kinds``; ``command_table`` pairs them). Each module's ``HANDLERS`` maps a command name to a function
(db, node key, now in ms, checked arguments) -> a small JSON-able result."""
