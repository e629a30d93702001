"""The types of the cognitive core's commands, one module per concern: names, argument schemas,
summaries; no handlers (those are in ``handlers``, paired by ``command_table``)."""
