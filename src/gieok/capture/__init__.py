"""Capture: agent hooks, importers and secret redaction."""
