"""Sync: set reconciliation of containers between two nodes (notes, CogSync).

Owns: the range-based reconciliation state machines, pure and sans-IO:
format 2 (``rbsr``, over ``hash_index``, checked by ``rbsr_wire``) and, for
peers that predate it, format 1 (``reconcile``); ``session`` runs either.
The network driver and the store call it; it calls neither.
"""
