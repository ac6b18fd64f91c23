"""Measured leg: decode-attention microbenchmarks, copy bandwidth and the two-term KV-slope fit."""
