"""The model: the paper's equations as pure, vectorized functions of typed specs (footprint Eq. 1-2, parameters,
roofline, regimes and crossovers, workloads W1-W4). No file I/O; imports only kvwall.inputs and kvwall.units."""
