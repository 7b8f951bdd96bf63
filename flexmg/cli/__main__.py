"""``python -m flexmg.cli``: the ``flexmg`` command line."""

import sys

from flexmg.cli import main

sys.exit(main())
