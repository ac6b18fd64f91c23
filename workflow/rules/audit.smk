# Reproduction audit: the paper's printed numbers against ours.
AUDIT_ARTIFACTS = []
