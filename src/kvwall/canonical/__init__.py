"""CANONICAL-NUMBERS.md and canonical-numbers.json: the document (numbers with one evidence class each), its sections
(derived, tiers, measured, audit), the builder that assembles them, and the Markdown template."""
