"""The package version (one place, read by the SDK's ``sdk`` field and the OpenAPI document)."""

__version__ = "0.1.0"
