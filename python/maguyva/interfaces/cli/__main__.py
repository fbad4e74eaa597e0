"""`python -m maguyva.interfaces.cli`: the same as `maguyva`."""

from maguyva.interfaces.cli.main import main

raise SystemExit(main())
