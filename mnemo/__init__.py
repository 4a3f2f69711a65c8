"""mnemo: recordings in, a memory graph you can question out. The composition root lives here."""

__version__ = "0.1.0"
