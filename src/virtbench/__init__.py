"""virtbench: compare virtualization runtimes on one host, with honest statistics."""

__version__ = "0.1.0"
