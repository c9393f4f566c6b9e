"""``python -m sim.validation``: rebuild docs/validation.md."""

from sim.validation.report import main

raise SystemExit(main())
