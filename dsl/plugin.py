"""The pytest plugin (under construction)."""
