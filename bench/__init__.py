"""Dataset loaders, runners and metrics behind ``mnemo bench`` (planned: issues 3–5)."""
