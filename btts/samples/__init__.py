"""The demo's deterministic sample data (:mod:`.data`) and the checks that each documented query
answers what the generated events say (:mod:`.checks`)."""
