"""The ingest stages on Ray Data (planned). Stages are plain per-clip functions so they map here."""
