"""Consensus: CogConsensus (weighted votes and evaluations on any container, verifiable
results) and MeshConsensus (binding decisions by a weighted BFT committee). Pure cores;
the node and ``sims/`` drive them."""
