"""`kvwall plan`: the deployments of a model on up to N devices that meet a latency target, best first."""
