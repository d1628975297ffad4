"""The cold path: tagging, embedding, profiles, archive and consolidation."""
