"""``python -m semuq_eval.assets``: the same as ``semuq-eval assets``."""

import sys

from semuq_eval.assets.cli import main

sys.exit(main())
