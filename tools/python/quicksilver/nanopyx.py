"""A drop-in for NanoPyx's eSRRF: switch a notebook with one import line.

>>> from quicksilver.nanopyx import eSRRF      # was: from nanopyx import eSRRF
>>> sr = eSRRF(stack, magnification=5, temporal_correlation="VAR")
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

import re

from . import _keywords, esrrf
from ._errors import ParameterError

__all__ = ["eSRRF"]


# quicksilver's parameter names as NanoPyx spells them, for messages
_NAMES = {"temporal": "temporal_correlation",
          "intensity_weighting": "doIntensityWeighting"}


@_keywords
def eSRRF(image: Any, magnification: int = 5, radius: float = 1.5,
          sensitivity: float = 1, frames_per_timepoint: int = 0,
          temporal_correlation: str = "AVG", use_fht: bool = False,
          doIntensityWeighting: bool = True,
          macro_pixel_correction: bool = True, pad_edges: bool = False,
          _force_run_type: Optional[str] = None) -> np.ndarray:
    """eSRRF with the signature and return shape of NanoPyx 2.1's
    ``nanopyx.eSRRF`` (``nanopyx.methods.esrrf.eSRRF_workflow.eSRRF``).

    Returns ``np.squeeze`` of the ``(T, R*M, C*M)`` float32 result, as NanoPyx
    does: 2-D when there is one timepoint. The numbers are NanoPyx's within
    the tolerances of quicksilver's reference fixtures.

    Arguments as in NanoPyx:
        image, magnification, radius, sensitivity, frames_per_timepoint
        (0 or more than the frames: all frames), temporal_correlation
        (``"AVG"``, ``"VAR"`` or ``"TAC2"``, any case), doIntensityWeighting,
        macro_pixel_correction: accepted and honoured. ``image`` may also be
        2-D (one frame), which NanoPyx does not accept.
        _force_run_type: accepted and ignored; quicksilver's engine chooses
            the implementation (use ``quicksilver.Engine.run(..., impl=)`` to
            force one).
        use_fht, pad_edges: accepted at their default (False); True raises
            :class:`quicksilver.ParameterError`, as quicksilver has neither
            Fourier interpolation nor edge padding (silently ignoring them
            would change the numbers).
    """
    del _force_run_type  # accepted for compatibility; the engine chooses
    if use_fht:
        raise ParameterError("use_fht=True: Fourier interpolation is not "
                             "implemented; quicksilver magnifies with "
                             "Catmull-Rom (use_fht=False)", name="param")
    if pad_edges:
        raise ParameterError("pad_edges=True: edge padding is not "
                             "implemented; borders are zero as with "
                             "pad_edges=False", name="param")
    try:
        out = esrrf(image, magnification=magnification, radius=radius,
                    sensitivity=sensitivity,
                    frames_per_timepoint=frames_per_timepoint,
                    temporal=str(temporal_correlation).lower(),
                    intensity_weighting=bool(doIntensityWeighting),
                    macro_pixel_correction=bool(macro_pixel_correction))
    except ParameterError as e:
        # the engine names its own parameters; the caller used NanoPyx's
        msg = re.sub(r"\b(" + "|".join(_NAMES) + r")\b",
                     lambda m: _NAMES[m.group(1)], e.message)
        raise ParameterError(msg, name=e.name) from None
    return np.squeeze(out)
