"""A drop-in for NanoPyx's eSRRF: switch a notebook with one import line.

>>> from quicksilver.nanopyx import eSRRF      # was: from nanopyx import eSRRF
>>> sr = eSRRF(stack, magnification=5, temporal_correlation="VAR")
>>> from quicksilver.nanopyx import run_esrrf_parameter_sweep
>>> qnr = run_esrrf_parameter_sweep(stack, 5, [1, 2, 4], [1, 1.5, 2],
...                                 return_qnr=True)   # qnr[s, r]
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

import re

from . import _keywords, esrrf, esrrf_sweep
from ._errors import ParameterError

__all__ = ["eSRRF", "run_esrrf_parameter_sweep"]


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


def run_esrrf_parameter_sweep(img: Any, magnification: int = 2,
                              sensitivities: Sequence[float] = (1, 2),
                              radii: Sequence[float] = (1, 1.5),
                              temporal_correlation: str = "AVG",
                              use_decorr: bool = False,
                              plot_sweep: bool = False,
                              return_qnr: bool = False,
                              n_frames: Optional[int] = None) -> Any:
    """NanoPyx 2.1's ``nanopyx.methods.esrrf.parameter_sweep.
    run_esrrf_parameter_sweep`` with its signature and return shape: the
    QnR map ``(len(sensitivities), len(radii))`` float32 indexed ``[s, r]``
    when `return_qnr`, else the ``(sensitivity, radius)`` of the highest
    QnR. The points are quicksilver's sweep (RSP by SQUIRREL against the
    stack's mean, FRC between the odd and even frames' AVG
    reconstructions, QnR by NanoPyx's formula), sharing every stage the
    points share.

    use_decorr, plot_sweep and n_frames are accepted at their defaults
    (False, False, None); other values raise
    :class:`quicksilver.ParameterError`, since quicksilver's sweep scores
    resolution by FRC over the whole stack and draws nothing (its CLI,
    ``quicksilver sweep --svg``, writes heat maps).
    """
    if use_decorr:
        raise ParameterError("use_decorr=True: the sweep scores resolution "
                             "by FRC (quicksilver.Engine.run('decorr', ...) "
                             "gives decorrelation analysis on an image)",
                             name="param")
    if plot_sweep:
        raise ParameterError("plot_sweep=True: nothing is drawn here; "
                             "`quicksilver sweep --svg` writes heat maps",
                             name="param")
    if n_frames is not None:
        raise ParameterError("n_frames: blocks of frames are not swept; "
                             "pass the block itself", name="param")
    res = esrrf_sweep(img, list(radii), list(sensitivities),
                      temporal=[str(temporal_correlation).lower()],
                      magnification=magnification)
    qnr = np.asarray(res.qnr[0], dtype=np.float32)
    if return_qnr:
        return qnr
    s, r = np.unravel_index(int(np.argmax(qnr)), qnr.shape)
    return list(sensitivities)[s], list(radii)[r]
