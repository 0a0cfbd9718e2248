"""Value grids built exactly, so that a protocol's values are the same bits on every machine.

``numpy.logspace`` raises 10 to each exponent with numpy's vectorised ``power``, which is dispatched per
instruction set: on an AVX-512 machine ``np.logspace(-6, 6, 25)[2]`` is ``9.999999999999999e-06``, on others
``1e-05``. A protocol value is stored in every result and its distances rank the texts, so it must not depend on
the CPU. Here each power is computed in decimal arithmetic (software, the same everywhere) and rounded once to
the nearest double: the correctly rounded ``10 ** e``, which is what a correctly rounded ``pow`` (and the
paper's own machine) gives.
"""
from __future__ import annotations

from decimal import Context, Decimal

import numpy as np

_DECIMAL = Context(prec=60)  # 60 digits: far past double precision, so one final rounding decides


def logspace(start: float, stop: float, num: int) -> np.ndarray:
    """``10 ** linspace(start, stop, num)``, each power correctly rounded to float64 (``numpy.logspace``'s grid).

    The exponents are numpy's own ``linspace`` (plain IEEE multiplications and additions, identical on every
    CPU); only the power is taken out of numpy."""
    exponents = np.linspace(start, stop, int(num))
    ten = Decimal(10)
    return np.array([float(_DECIMAL.power(ten, Decimal(float(e)))) for e in exponents], dtype=np.float64)
