"""`python -m maguyva`: the same as `maguyva`."""

from maguyva.interfaces.cli.main import main

raise SystemExit(main())
