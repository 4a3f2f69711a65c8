"""``mnemo ingest --ray``: the ingest stages of ``pipeline`` with perception on a Ray Data actor pool,
and the reorder buffer that hands results to the one writer in clip order. Imports no Ray until called."""
