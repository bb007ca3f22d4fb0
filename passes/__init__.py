"""passes of byoc."""
