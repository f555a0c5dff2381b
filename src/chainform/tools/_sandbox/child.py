"""The sandboxed child's script: loads `confine` (from cached bytecode) and runs it."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # confine.main takes it out again
import confine  # type: ignore[import-not-found]

confine.main()
