"""registry: a declarative recipe and provenance registry for LLM serving runs."""

__version__ = "0.1.0"
