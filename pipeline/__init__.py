"""The ingest stages, shared by ``mnemo ingest`` (one process) and ``mnemo ingest --ray`` (``ray_jobs``):
plan the clips, observe one clip, memorize and commit in clip order."""
