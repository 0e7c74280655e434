import sys

from profwin_memory.cli import main

sys.exit(main())
