"""The memory tier behind HBM (Figure 3.1): the four constraints, the per-layer prefetch simulation, tier economics
and the tier scenarios read from config/tiers.yaml."""
