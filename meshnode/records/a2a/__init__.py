"""The A2A face's tables as the person's actions and the face both use them: the held queue of unknown
parties' messages (held_queue.py, rows of ``gate_confirmations``), the blocks (blocks.py, migration
0023) and how a client's address is grouped (addresses.py)."""
