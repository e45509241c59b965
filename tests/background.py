"""Session work started in the background while other tests run (tests/conftest.py starts it; a fixture takes its
result, or does the work itself when nothing started it).

``start`` runs one piece of work in a thread of its own (the SLURM run, which waits for the smoke run); ``start_lane``
runs several, one after the other, in one thread: the session's heavy subprocess work (planning the paper config,
the paper miniature's partial run, ...), so that it uses the core the unit tests leave free without crowding it;
``once`` runs a piece of work for whichever thread asks first (a lane or a test) and makes the others wait for it."""

from __future__ import annotations

import threading
from collections.abc import Callable

STARTED: dict[str, dict] = {}
_CLAIM = threading.Lock()


def _run(state: dict, work: Callable[[], object]) -> None:
    try:
        state["value"] = work()
    except BaseException as err:  # noqa: BLE001 (re-raised in the fixture that takes the result)
        state["error"] = err
    finally:
        state["done"].set()


def start_lane(name: str, works: list[tuple[str, Callable[[], object]]]) -> None:
    """Run each ``(name, work)`` in order in one thread; each result, or what it raised (a skip or a failed assertion
    too), is kept for ``result`` under its name."""
    states = [(work_name, {"done": threading.Event()}, work) for work_name, work in works]
    for work_name, state, _ in states:
        STARTED[work_name] = state

    def target():
        for _, state, work in states:
            _run(state, work)

    threading.Thread(target=target, name=f"background {name}", daemon=True).start()


def start(name: str, work: Callable[[], object]) -> None:
    """Run ``work`` in a thread of its own; its result, or what it raised, is kept for ``result``."""
    start_lane(name, [(name, work)])


def result(name: str, work: Callable[[], object]):
    """The result of the background ``name`` (waiting for it), or of ``work`` run here when it was not started."""
    state = STARTED.get(name)
    if state is None:
        return work()
    state["done"].wait()
    if "error" in state:
        raise state["error"]
    return state["value"]


def once(name: str, work: Callable[[], object]):
    """The result of ``work``, run once per session under ``name`` by the first thread that asks (here, or a lane's
    work); a thread that asks meanwhile waits for it, and what it raised is raised to each."""
    with _CLAIM:
        mine = name not in STARTED
        if mine:
            STARTED[name] = {"done": threading.Event()}
    if mine:
        _run(STARTED[name], work)
    return result(name, work)
