"""Building and updating the index: the indexer, the graph follow-ups, watch, memory."""
