"""One client for OpenAI-compatible chat endpoints (vLLM, Ollama, llama.cpp server, OpenAI, Gemini's
compatible API): requests, bounded retries on transient errors, JSON-reply validation."""

from llm.client import ChatClient, LLMError
from llm.images import image_data_url, jpeg_data_url, qwen_prepare

__all__ = ["ChatClient", "LLMError", "image_data_url", "jpeg_data_url", "qwen_prepare"]
