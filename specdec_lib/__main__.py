import sys

from specdec_lib.cli import main

sys.exit(main())
