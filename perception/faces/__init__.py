"""Faces: detection and identity embeddings (dlib, insightface), quality filter, clip-local grouping."""
