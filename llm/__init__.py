"""One client for OpenAI-compatible chat endpoints (vLLM, Ollama, llama.cpp server, OpenAI, Gemini's
compatible API): requests, bounded retries on transient errors, JSON-reply validation."""

from llm.client import ChatClient, LLMError, image_data_url

__all__ = ["ChatClient", "LLMError", "image_data_url"]
