"""Validation: measured serving points (reported) held against the bounds kvwall derives for their deployments.

``run.validate`` maps each row to a deployment (``layout``), derives its bounds and realizations (``points``),
explains every point below its bound (``below_bound``), fits what the gap is made of (``gap``) and tests the
paper's central claim on pairs of weight formats (``claim``).
"""
