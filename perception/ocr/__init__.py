"""On-screen text: detection and recognition (RapidOCR), with word spacing restored."""
