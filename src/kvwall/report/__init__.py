"""The review report: one self-contained HTML file that shows every artifact rendered (figures, tables, notebooks,
CANONICAL-NUMBERS), read from the committed files, for a reviewer without a checkout or a network."""
