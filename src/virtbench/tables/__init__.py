"""What every spec table's model shares (base.py), below the experiment types that build
their tables on it and the spec that validates them."""
