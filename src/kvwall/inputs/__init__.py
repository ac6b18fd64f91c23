"""Inputs: typed specs, the catalogue, the loader with its JSON Schemas, and reported values with their citations.

The floor above kvwall.units and kvwall.formats: nothing here imports the model or an artifact."""
