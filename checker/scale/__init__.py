"""Scale out: one shard of a suite (--shard I/N) and merging shards' results back into one."""
