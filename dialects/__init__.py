"""dialects of byoc."""
