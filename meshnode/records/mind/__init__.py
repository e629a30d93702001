"""The agent's records in the store: the commands a person holds or releases, the traces of its ticks,
the LLMs it thinks with. What the mind actions read and write; the cognitive cycle uses them too."""
