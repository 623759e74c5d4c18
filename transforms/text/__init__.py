"""Text codecs at the bottom of every path: times and their formats (:mod:`.timefmt`), row-key
segments (:mod:`.keys`) and event records (:mod:`.events`)."""
