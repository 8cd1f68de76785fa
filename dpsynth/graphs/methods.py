"""The degree-release methods by name (with their neighbouring relation) and the default degree cap: constants
that ``dpsynth --help`` reads, kept apart from :mod:`dpsynth.graphs.degrees` so that the help imports no NumPy."""

METHODS = {  # name -> neighbouring relation
    "edge-dp-sequence": "edge",
    "node-dp-projection": "node",
    "node-dp-cumulative": "node",
    "node-dp-poster-gan": "node replacement",
}
DEFAULT_THETA = 10
