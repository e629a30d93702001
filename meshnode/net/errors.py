"""The network layer's error."""

from meshnode.base.errors import MeshnodeError


class NetError(MeshnodeError):
    """A network operation failed: peer not found, unreachable, or refused."""
