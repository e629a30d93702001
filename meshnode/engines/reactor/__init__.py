"""The reactor: signals to bounded wakes, with traces and escalation (protocols/reactor.md).

Pure parts (reactor-core): ``types`` (the values), ``core`` (the sans-IO ``Reactor``; its settings,
``[reactor]``, are meshnode.base.config.reactor), ``limits`` (rules and limits), ``pending`` (per-agent queues), ``ladder``
(after a run: checks and escalation), ``aliases``, ``noise``,
``wake_context`` and ``report``. The store side, the wake adapters and the node's driver build on
them; nothing here does I/O except ``AliasRegistry.load`` reading its file.
"""
