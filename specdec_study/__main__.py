"""`python -m specdec_study`: the command line (also `python -m specdec_lib`)."""

import sys

from specdec_study.cli import main

sys.exit(main())
