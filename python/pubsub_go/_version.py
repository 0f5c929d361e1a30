"""The package version: the one place it is written. pyproject.toml reads it
(dynamic version) and setup.py stamps it into libpubsubgo (-X main.Version)."""

__version__ = "0.1.0"
