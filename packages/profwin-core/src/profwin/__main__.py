import sys

from profwin.cli import main

sys.exit(main())
