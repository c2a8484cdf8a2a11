"""``python -m koordgang``."""

import sys

from koordgang.cli import main

sys.exit(main())
