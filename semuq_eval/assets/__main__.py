"""``python -m semuq_eval.assets``: the same as ``semuq-eval assets``."""

import sys

from semuq_eval.commands.assets import main

sys.exit(main())
