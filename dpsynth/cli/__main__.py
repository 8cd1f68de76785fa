"""``python -m dpsynth.cli``: the same as the ``dpsynth`` command."""

import sys

from dpsynth.cli.main import main

sys.exit(main())
