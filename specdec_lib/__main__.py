"""`python -m specdec_lib`: the study's command line (`specdec_study.cli`), under the name the
README and users already type. Not imported by any module of the library."""

import sys

from specdec_study.cli import main

sys.exit(main())
