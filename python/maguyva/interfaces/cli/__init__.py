"""The `maguyva` command line."""
