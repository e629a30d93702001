"""Simulated meshes: meshnode's real sans-IO cores under a deterministic discrete-event network."""
