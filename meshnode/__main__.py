import sys

from meshnode.faces.cli import main

sys.exit(main())
