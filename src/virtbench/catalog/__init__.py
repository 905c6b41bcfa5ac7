"""Built-in experiment specs (TOML), loadable by name: `virtbench run quickstart`."""
