"""The Bigtable connector: rows written as MutateRows requests (:mod:`.write`, :mod:`.transport`,
:mod:`.client_entries`, :mod:`.collapse`), aggregates written by read-modify-write
(:mod:`.write_aggregates`), and tables read back (:mod:`.read`)."""
