"""The marginal engine of the select-measure-generate models (MST, AIM): a discrete domain from DP metadata
(:mod:`~dpsynth.marginals.domain`), exact count tables from a backend (:mod:`~dpsynth.marginals.backends`:
NumPy in memory, DuckDB out of core), the DP mechanisms that release them into the ledger
(:mod:`~dpsynth.marginals.mechanisms`), and the graphical model fitted to the noisy tables and sampled
(:mod:`~dpsynth.marginals.graphical_model`)."""
