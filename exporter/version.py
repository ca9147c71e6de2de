"""The package version, in a module of its own so that the modules below the public facade (``exporter/__init__``)
can read it without importing the facade, which imports them."""

__version__ = "0.1.0"  # the package version (pyproject.toml); also the producer_version of every exported model
