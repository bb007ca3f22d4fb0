"""backends of byoc."""
