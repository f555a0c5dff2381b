"""chainform: tool chains that end in schema-valid data, on any provider."""

__version__ = "0.1.0"
