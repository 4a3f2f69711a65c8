"""Sources, 30 s clips and per-clip observations (speech, voices, faces).

Import what you need from the submodules; importing this package loads no model.
"""
