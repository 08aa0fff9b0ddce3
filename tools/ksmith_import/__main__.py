"""The importer's entry point: `python3 tools/ksmith_import MODEL.py ...` (what `ksmith import`
and bench/import_modules.sh run) and `python3 -m ksmith_import ...`; main()'s exit status."""
import os
import sys

if not __package__:  # run as a folder or a file: on the path, the package's parent rather than its folder
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0]) == here:
        sys.path[0] = os.path.dirname(here)
    else:
        sys.path.insert(0, os.path.dirname(here))
    from ksmith_import import main
else:
    from . import main

sys.exit(main())
