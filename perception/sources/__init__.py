"""Sources: recordings cut into 30 s clips and decoded, screenshot folders, and frame handling."""
