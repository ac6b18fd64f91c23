"""The memory-tier figures: Figure 3.1 (four constraints, what a tier does to each) and per-transfer timelines of
sustainability against hiding. Saved byte-stable with kvwall.figures.style; numbers quoted from the canonical numbers
or computed by kvwall.tier.constraints and kvwall.tier.prefetch."""
