"""One client for OpenAI-compatible chat endpoints (planned: issues 3–5).

Nothing here yet: the offline defaults of the foundation need no LLM.
"""
