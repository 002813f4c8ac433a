"""``python -m orbit_actors.cli``: the ``orbit`` command."""

from __future__ import annotations

from .app import main

raise SystemExit(main())
