"""Session-wide settings for the tests."""

from __future__ import annotations

import os

# No test but tests/test_daemon.py (which re-enables it and stops what it starts) may leave
# warm search servers behind: every `maguyva search` of the suite, in process or in a child
# process, answers in its own process.
os.environ["MAGUYVA_DAEMON"] = "0"
