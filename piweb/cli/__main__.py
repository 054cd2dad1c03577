"""`python -m piweb.cli`: the `piweb` command without the installed script."""

from __future__ import annotations

import sys

from piweb.cli import main

sys.exit(main())
