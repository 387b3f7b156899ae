"""The package's status table is the C header's: every KVHASH_OK /
KVHASH_ERR_* code the ABI defines has the same value and name here, so a
status added to the library cannot reach Python as an "unknown status"."""

from __future__ import annotations

import re

from conftest import REPO

from kvhash import _errors

HEADER = REPO / "capi" / "include" / "kvhash.h"


def header_statuses() -> dict[str, int]:
    text = HEADER.read_text()
    found = re.findall(r"^#define (KVHASH_(?:OK|ERR_[A-Z_]+))\s+\(?(-?\d+)\)?", text, re.MULTILINE)
    return {name: int(value) for name, value in found}


def test_every_header_status_is_in_the_table() -> None:
    statuses = header_statuses()
    assert "KVHASH_ERR_NO_MEMORY" in statuses, "the header parse found %r" % statuses
    assert {name: code for code, name in _errors.STATUS_NAMES.items()} == statuses


def test_every_error_status_has_its_own_exception_class() -> None:
    for code, name in _errors.STATUS_NAMES.items():
        if code in (_errors.OK, _errors.ERR_BUFFER_TOO_SMALL):
            continue  # never raised: success, and a retry with more room
        e = _errors.error_for(code, "")
        assert e.status == code and str(e) == name
        # InternalError stands for unknown codes too; OUT_OF_BOUNDS is a
        # binding bug and deliberately one of them.
        if code not in (_errors.ERR_INTERNAL, _errors.ERR_OUT_OF_BOUNDS):
            assert type(e) is not _errors.InternalError, name
