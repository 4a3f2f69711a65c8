"""Answering questions from memory, with citations to the clips used."""
