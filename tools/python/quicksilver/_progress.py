"""Progress reports of a call: what the ``progress=`` argument of
:meth:`quicksilver.Engine.run` and the module-level functions turns into for
the compiled core.

The engine reports ``(done, total)`` units of work (frames for most
implementations; ``total`` is 0 while unknown) about every 50 ms, ``done``
never decreasing, and once more with ``done == total`` when the call
succeeds. The callback runs on the thread that made the call, with the GIL.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Callable, Iterator, Optional, Union

#: ``None``/``False``: no reports; ``True``: a tqdm bar when tqdm is
#: installed (nothing otherwise); a callable ``f(done, total)``: called with
#: each report, a true return value (or an exception) cancels the call.
ProgressArg = Union[None, bool, Callable[[int, int], Optional[bool]]]


@contextlib.contextmanager
def callback(progress: ProgressArg,
             desc: str) -> Iterator[Optional[Callable[[int, int], object]]]:
    """The callable to hand to the core for `progress` (None for none);
    a tqdm bar named `desc` is closed when the block ends."""
    if progress is None or progress is False:
        yield None
        return
    if progress is True:
        try:
            with warnings.catch_warnings():
                # tqdm.auto in Jupyter without ipywidgets: a text bar, and
                # a warning saying so, which is noise here
                warnings.simplefilter("ignore")
                from tqdm.auto import tqdm
        except ImportError:
            yield None
            return
        bar = tqdm(total=None, desc=desc, leave=False, dynamic_ncols=True)

        def show(done: int, total: int) -> None:
            if total and bar.total != total:
                bar.total = total
            bar.update(done - bar.n)

        try:
            yield show
        finally:
            bar.close()
        return
    if not callable(progress):
        raise TypeError("progress must be None, a bool, or a callable "
                        f"(done, total); got {type(progress).__name__}")
    yield progress
