# CANONICAL-NUMBERS.md, its machine-readable twin, and the four-constraints figures.
CANONICAL_ARTIFACTS = []
