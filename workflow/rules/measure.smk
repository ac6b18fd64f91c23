# Measured leg: `snakemake --cores 4 measure` records a run; the default build renders committed records.
MEASURED_ARTIFACTS = []
