"""Memory as a service: the REST API and timeline page (``mnemo serve``) and the MCP tools
(``mnemo mcp``), both over one ``MemoryService``."""
