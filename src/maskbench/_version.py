"""maskbench's version, in a module of its own: runtime.versions() records it without importing the package root,
whose lazy public API (maskbench/__init__.py) reaches most of the library."""

__version__ = "0.1.0"
