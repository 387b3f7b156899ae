"""Type aliases shared by the API's annotations (the package ships
``py.typed``; ``make python-typecheck`` checks them with ``mypy --strict``).

numpy is an optional dependency and ``collections.abc.Buffer`` is new in
Python 3.12, so their names are imported for the type checker only. The
aliases name them in strings, which Python never evaluates: every module of
the package postpones its annotations (``from __future__ import annotations``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Iterable, Tuple, Union

if TYPE_CHECKING:
    import array

    import numpy as np
    from numpy.typing import NDArray

    # "as Buffer": re-exported for the other modules' annotations.
    if sys.version_info >= (3, 12):
        from collections.abc import Buffer as Buffer
    else:
        from typing_extensions import Buffer as Buffer

#: One data-parallel rank of one worker: ``(worker_id, dp_rank)``.
Worker = Tuple[int, int]

#: An array argument of u32 tokens or u64 hashes: a list (or any iterable) of
#: ints, or a buffer (``array('I')``, numpy, memoryview) read without a copy.
IntArray = Union[Iterable[int], "Buffer"]

#: What the hashing functions return: ``array('Q')``, or a numpy uint64
#: array when the input was a numpy array.
U64Array = Union["array.array[int]", "NDArray[np.uint64]"]
