"""The package version, in the bottom layer so every layer (metrics, health routes, the CLI) may read it."""

__version__ = "0.1.0"
