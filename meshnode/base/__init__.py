"""The base layer: the container codec (``container``), identities and keys (``identity``),
settings (``config``), metrics, typed errors and lazy exports. It imports nothing else of meshnode."""
