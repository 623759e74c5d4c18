"""Hourly rollups: the pure arithmetic of a bucket (:mod:`.core`) and the streaming step that keeps
them exact under retries (:mod:`.hourly`)."""
