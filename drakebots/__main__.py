"""`python -m drakebots` is the `drakebots` command."""

import sys

from drakebots.cli import main

sys.exit(main())
