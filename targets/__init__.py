"""Printers of IR to text (C, reports)."""
