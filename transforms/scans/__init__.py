"""What a query reads: key ranges from a schema's query and a time window (:mod:`.key_ranges`), and
the fan-out over salted prefixes (:mod:`.salted_reads`)."""
