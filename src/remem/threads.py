"""Background threads: lower priority, so work nobody waits for gives way to work an agent waits for."""

from __future__ import annotations

import logging
import os
import sys
import threading

log = logging.getLogger("remem")

BACKGROUND_NICE = 15


def background_priority() -> None:
    """Lower this thread's CPU priority (on Linux nice is per thread); elsewhere, or when
    refused, nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    except OSError as e:
        log.debug("could not lower a background thread's priority: %s", e)
