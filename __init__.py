"""byoc."""
