"""Ending a child process of the engine (a helper search, the network server).

Owns: `end_process`. Imports: nothing of leelaz.
"""

from __future__ import annotations


def end_process(process, conn, timeout: float = 2.0) -> None:
    """Ask `process` to quit over `conn` (("quit",)), terminate it if it does not within
    `timeout`, and close `conn`."""
    if process.is_alive():
        try:
            conn.send(("quit",))
        except (OSError, ValueError):
            pass
        process.join(timeout)
        if process.is_alive():
            process.terminate()
            process.join(timeout)
    conn.close()
