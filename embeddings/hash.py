"""A deterministic lexical text embedder (hashed word and bigram counts).

No model, no weights: for tests and for stores that must be built without torch. It only captures
word overlap, so use ``mpnet`` or ``minilm`` for real memories.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

_TOKEN = re.compile(r"[a-z0-9]+")


class HashText:
    name = "hash-384"
    dim = 384

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            tokens = _TOKEN.findall(text.lower())
            for feat in tokens + [a + " " + b for a, b in zip(tokens, tokens[1:])]:
                digest = hashlib.blake2b(feat.encode(), digest_size=8).digest()
                idx = int.from_bytes(digest[:4], "little") % self.dim
                out[row, idx] += 1.0 if digest[4] & 1 else -1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
        return out
