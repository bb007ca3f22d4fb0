"""runtime of byoc."""
