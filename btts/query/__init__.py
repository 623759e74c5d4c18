"""Reading back: a query planned from the schema (:mod:`.engine`), rows decoded into typed
records (:mod:`.records`), and records shown as text, JSON, CSV (:mod:`.render`) or a chart
(:mod:`.plot`)."""
