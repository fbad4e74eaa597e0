"""`python -m maguyva.eval eval|tune ...` (the same as `maguyva eval|tune`)."""

import sys

from maguyva.eval.cli import main

sys.exit(main())
