"""What a query reads: key ranges from a schema's query and a time window, one per bucket of a
salted table (:mod:`.key_ranges`), and a salted table's buckets merged in time order
(:mod:`.salted_reads`)."""
