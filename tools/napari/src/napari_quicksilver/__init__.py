"""napari-quicksilver: eSRRF super-resolution in napari, computed by the
quicksilver engine (the fastest implementation it has timed on this
machine) in a worker thread, with a progress bar and a Cancel button.

The widget (:class:`EsrrfWidget`) is declared in ``napari.yaml`` and opens
from *Plugins > eSRRF (quicksilver)*, or with
``napari -w napari-quicksilver``.
"""

from ._widget import (Channel, EsrrfWidget, channel_axis_of, channel_stacks,
                      compute, parse_values, result_layer_kwargs, sweep)

__all__ = ["Channel", "EsrrfWidget", "channel_axis_of", "channel_stacks",
           "compute", "parse_values", "result_layer_kwargs", "sweep"]
