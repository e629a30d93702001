"""Sync: set reconciliation of containers between two nodes (notes, CogSync).

Owns: the range-based reconciliation state machine (``reconcile``), pure and
sans-IO. The network driver and the store call it; it calls neither.
"""
