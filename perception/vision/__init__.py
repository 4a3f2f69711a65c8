"""Vision: object/scene tags and image embeddings of frames, and clip captions from a VLM."""
