"""The remem daemon: REST API (``/api/v1``), live progress over SSE, background jobs, web viewer.

Importing this package is cheap on purpose: ``remem serve`` binds its port and answers
``/health`` before FastAPI is even imported (see :mod:`remem.server.front`).
"""

from __future__ import annotations

API_PREFIX = "/api/v1"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7077
