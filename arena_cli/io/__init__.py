"""Reading vote logs, the on-disk store, and atomic file writes."""
