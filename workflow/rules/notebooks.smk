# Audit notebooks executed by papermill (notebooks/executed/).
NOTEBOOK_ARTIFACTS = []
