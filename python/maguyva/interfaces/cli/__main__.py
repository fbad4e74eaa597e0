"""`python -m maguyva.interfaces.cli`: the same as `maguyva`."""

from maguyva.interfaces.client import main  # the warm server first, else the full CLI

raise SystemExit(main())
