"""The memory graph on LanceDB: schema, content-hash ids, writes per clip, hybrid search."""
