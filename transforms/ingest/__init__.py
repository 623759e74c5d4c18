"""Input to rows as a Beam step: files read as blocks of records (:mod:`.readers`,
:mod:`.json_array`), records built into row batches with dead letters (:mod:`.build_rows`), and
the coder batches travel with (:mod:`.batches`)."""
