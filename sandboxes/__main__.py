"""``python -m flexmg.sandboxes build-image | status``."""

import sys

from .cli import main

sys.exit(main())
