"""kvwall: the KV-cache memory wall, derived from raw specs."""
