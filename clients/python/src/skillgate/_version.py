"""The package version, in one place for the client's Initialize and packaging."""

__version__ = "0.1.0"
