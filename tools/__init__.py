"""tools of byoc."""
