"""Fault scenarios: what the user's media, a bad LLM server, planted secrets and a damaged archive
do to a store, each through the real ``mnemo`` command.

- ``corrupt_media`` (``media_files``): a folder of good media beside broken files, ingested by
  ``mnemo ingest`` in a child process, then again; the folder is hashed before and after.
- ``malformed_llm`` (``media_llm``): ``memorize.writer = "llm"`` against a scripted
  OpenAI-compatible server on 127.0.0.1 that answers each clip with another kind of bad reply.
- ``planted_secrets`` (``media_secrets``): the redaction corpus's secrets rendered as screen text
  into screenshots that ``CaptureStore`` writes as the capture daemon does (window titles in the
  sidecars), and a few spoken by espeak-ng (that part is not tried, with a note, where espeak-ng is
  missing), ingested with the configured OCR and ASR; then every byte the store holds is searched.
- ``export_import`` (``media_archive``): a store with people, memories, edges, a people log and a
  forget log through ``mnemo export`` and ``mnemo import``, then damaged archives and taken folders.

The three ingesting scenarios run ``mnemo`` as ``mnemo_cmd`` (default: this Python, ``-m mnemo``,
this checkout's code): a test hands a command that breaks a guard first, to see the bench report it.
They use the user's config, with the ``hash`` text embedder (``MNEMO_GRAPH__TEXT_EMBEDDER``): which
embedder writes the memories does not change what a fault does, and it keeps the bench fast. What
they share is in ``media_kit``.
"""

from __future__ import annotations

from bench.faults import by_name
from bench.faults.media_archive import export_import
from bench.faults.media_files import corrupt_media
from bench.faults.media_llm import malformed_llm
from bench.faults.media_secrets import planted_secrets

SCENARIOS = by_name(corrupt_media, malformed_llm, planted_secrets, export_import)
