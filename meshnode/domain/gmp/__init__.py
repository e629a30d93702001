"""GMP: goals, tasks and their workflow entries as signed containers (protocols/gmp.md).

Pure parts here: ``build`` (signing the three classes), ``rules`` (step 8 admission:
who may publish which version) and ``view`` (what a lineage shows: head, state,
counted entries, holders, due state). The store side, meshnode.records.gmp (the service, reads,
and the hooks the store calls), and the node build on them.
"""
