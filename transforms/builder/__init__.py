"""From an event to its rows: the builder a schema compiles to (:mod:`.builder`), the value checks
it calls (:mod:`.fields`), the generated function (:mod:`.codegen`) and the request bytes it
writes (:mod:`.wire`)."""
