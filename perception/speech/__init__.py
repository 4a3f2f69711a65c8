"""Speech: recognition (faster-whisper with Silero VAD), voice embedding, and who spoke when."""
