"""Evaluation data sets read from their upstream formats, as typed records (no runners here)."""
