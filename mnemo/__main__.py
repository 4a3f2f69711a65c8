import sys

from mnemo.cli import main

sys.exit(main())
