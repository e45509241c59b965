"""Session work started in the background while other tests run (tests/conftest.py starts it; a fixture takes its
result, or does the work itself when nothing started it)."""

from __future__ import annotations

import threading
from collections.abc import Callable

STARTED: dict[str, dict] = {}


def start(name: str, work: Callable[[], object]) -> None:
    """Run ``work`` in a thread; its result, or what it raised (a skip or a failed assertion too), is kept for
    ``result``."""
    state: dict = {}

    def target():
        try:
            state["value"] = work()
        except BaseException as err:  # noqa: BLE001 (re-raised in the fixture that takes the result)
            state["error"] = err

    state["thread"] = threading.Thread(target=target, name=f"background {name}", daemon=True)
    STARTED[name] = state
    state["thread"].start()


def result(name: str, work: Callable[[], object]):
    """The result of the background ``name`` (waiting for it), or of ``work`` run here when it was not started."""
    state = STARTED.get(name)
    if state is None:
        return work()
    state["thread"].join()
    if "error" in state:
        raise state["error"]
    return state["value"]
