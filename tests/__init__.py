"""The suite's tests. Importing this package (before tests/conftest.py, so before numpy)
gives each test process one BLAS thread: the suite already runs on both cores (pytest -n 2),
and OpenBLAS's own threads, one a core, spin waiting for a core the other worker holds
(measured in docs/speed.md, "The test suite"). A value set in the environment is kept."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
