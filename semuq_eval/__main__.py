"""`python -m semuq_eval ...` (and `accelerate launch -m semuq_eval run ...`): the semuq-eval CLI."""

import sys

from semuq_eval.commands import main

sys.exit(main())
