"""Progress bars for long work: tqdm when it is installed, nothing when it is not.

Owns: `progress(total, desc)`, the one way the verbs and the trainer show progress. Imports:
tqdm (an extra: `pip install 'leelaz[tools]'`), lazily; any module may use it.

The bar goes to stderr and only when stderr is a terminal, so piped output and logs hold just
the verb's own lines; `say` prints a line above the bar without breaking it.
"""

from __future__ import annotations

import sys


class _NoBar:
    """The stand-in when tqdm is missing or the output is not a terminal."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, text: str) -> None:
        pass

    def say(self, text: str) -> None:
        print(text, flush=True)

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _TqdmBar(_NoBar):
    def __init__(self, bar):
        self.bar = bar

    def update(self, n: int = 1) -> None:
        self.bar.update(n)

    def set_postfix_str(self, text: str) -> None:
        self.bar.set_postfix_str(text, refresh=True)

    def say(self, text: str) -> None:
        self.bar.write(text, file=sys.stdout)
        sys.stdout.flush()

    def close(self) -> None:
        self.bar.close()


def progress(total: int | float | None, desc: str, unit: str = "it",
             enabled: bool = True) -> _NoBar:
    """A bar counting to `total` (None: open-ended), or a silent stand-in."""
    if not enabled or not sys.stderr.isatty():
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return _TqdmBar(tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                         dynamic_ncols=True))
