"""GMP: goals, tasks and their workflow entries as signed containers (protocols/gmp.md).

Pure parts here: ``build`` (signing the three classes), ``rules`` (step 8 admission:
who may publish which version) and ``view`` (what a lineage shows: head, state,
counted entries, holders, due state). The store, the service and the node build on them.
"""
