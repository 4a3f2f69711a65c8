"""``Embedder``: what the store needs of a text embedder (``embeddings/`` provides them).

A store embeds memories when it commits them (``graph.writes``) and queries when it searches
(``graph.search``); both receive the one that ``Store`` was opened with.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...
