"""The four retrievers behind one contract (`protocol`), found through `registry`."""
