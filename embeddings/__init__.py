"""Text embedders for memories and queries, by name (``mpnet``, ``minilm``, ``hash``); the store
receives one, it never builds one."""
