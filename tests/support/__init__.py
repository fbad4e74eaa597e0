"""Code the tests share and the package must not ship: fault injection, generated corpora,
the launcher of children with faults installed."""
