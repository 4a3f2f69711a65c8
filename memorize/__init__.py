"""Observations → memories: identity across clips, the offline writer."""
