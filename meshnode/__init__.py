"""meshnode: a node of the HyperCortex Mesh Protocol with an embedded cognitive agent."""

__version__ = "0.1.0"
