"""frontend of byoc."""
