"""Keep Cypher's function names readable to the engine in a Turkish or Azerbaijani locale.

Both graph engines upper-case a query's function names with the C library, in the
process's ``LC_CTYPE`` (which Python sets from the environment). Where the small ``i``
upper-cases to ``İ`` (U+0130: Turkish, Azerbaijani, Crimean Tatar), ``list_sort``
becomes ``LİST_SORT`` and no function with an ``i`` in its name is found
("function LiST_SORT does not exist"), and the names an engine registers when a database
is created are changed the same way. So before a database is created, such a case
mapping is replaced with ``C.UTF-8``'s for this process (only ``LC_CTYPE``; Python's own
``str.upper`` never depended on it). Any other locale is left as it is.
"""

from __future__ import annotations

import ctypes
import locale

#: What LC_CTYPE becomes where the case mapping of ``i`` is not ASCII's, first that exists.
ASCII_CASE = ("C.UTF-8", "C.utf8", "C")


def _maps_i_to_dotted() -> bool:
    """Whether the C library's current case mapping of ``i`` and ``I`` is not ASCII's."""
    try:
        libc = ctypes.CDLL(None)
        libc.towupper.restype = libc.towlower.restype = ctypes.c_uint32
        libc.towupper.argtypes = libc.towlower.argtypes = [ctypes.c_uint32]
        return libc.towupper(ord("i")) != ord("I") or libc.towlower(ord("I")) != ord("i")
    except (OSError, AttributeError):  # no C library to ask: go by the locale's language
        name = (locale.setlocale(locale.LC_CTYPE) or "").lower()
        return name.startswith(("tr_", "az_", "crh_"))


def ascii_case_mapping() -> str | None:
    """Make ``LC_CTYPE`` map ``i`` to ``I`` if it does not; the locale set, or None."""
    if not _maps_i_to_dotted():
        return None
    for name in ASCII_CASE:
        try:
            return locale.setlocale(locale.LC_CTYPE, name)
        except locale.Error:
            continue
    return None
