"""The mesh on py-libp2p: the host, DHT announces, the exchange protocol, gossip, heartbeats and sync,
consensus and reputation over the network; pure parts (bootstrap, liveness, frames, standing, announce
records, the unknown-author relay rate) beside the driver (``mesh.py``)."""
