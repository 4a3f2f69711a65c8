"""The memory graph on LanceDB: records (``rows``), table schemas (``schema``), the store and its
per-clip commit (``store``), hybrid search (``search``) and SQL filters (``sql``)."""
