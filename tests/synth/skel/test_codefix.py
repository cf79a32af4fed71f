"""Mechanical fixes of generated code: star imports from allowed modules become explicit imports."""

from __future__ import annotations

import pytest

from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.skel.codecheck import accept_skeleton, static_problems
from envscaler_mcp.synth.skel.codefix import explicit_star_imports

# The shape of the class answers of local/qwen2.5-coder-1.5b in the first run on the api-bank corpus: every
# attempt opened with a block of star imports.
STARRED = '''from typing import *
from datetime import *
from collections import *
from uuid import *


class PatientInfo(TypedDict):
    patient_id: str
    name: str
    visits: List["VisitInfo"]


class VisitInfo(TypedDict):
    visit_id: str
    when: str


class HospitalScheduling:
    def __init__(self) -> None:
        self.patients: Dict[str, PatientInfo] = {}
        self.slots: Dict[str, Optional[str]] = {}
'''


def test_star_imports_become_the_names_used():
    fixed, notes = explicit_star_imports(STARRED)
    assert fixed.splitlines()[0] == "from typing import Dict, List, Optional, TypedDict"
    assert "import *" not in fixed
    assert "from datetime" not in fixed and "from uuid" not in fixed  # nothing of them is used: removed
    assert len(notes) == 4 and "nothing (no name of it is used)" in notes[1]
    assert static_problems(STARRED, "HospitalScheduling")  # refused as written …
    assert static_problems(fixed, "HospitalScheduling") == []  # … and clean once rewritten
    assert [a.name for a in accept_skeleton(fixed, "HospitalScheduling")] == ["patients", "slots"]


def test_names_inside_string_annotations_count():
    source = "from typing import *\n\nclass A:\n    def __init__(self) -> None:\n        self.x: 'Dict[str, int]' = {}\n"
    fixed, _ = explicit_star_imports(source)
    assert fixed.startswith("from typing import Dict\n")


def test_the_later_star_import_wins_a_shared_name():
    source = "from collections import *\nfrom typing import *\n\nx: OrderedDict = OrderedDict()\n"
    fixed, _ = explicit_star_imports(source)
    assert fixed.splitlines()[:3] == ["from typing import OrderedDict", "", "x: OrderedDict = OrderedDict()"]


def test_star_imports_from_other_modules_are_left_for_the_checks():
    source = "from os import *\nfrom typing import *\n\nclass A:\n    def __init__(self) -> None:\n        self.a: Dict[str, str] = {}\n"
    fixed, notes = explicit_star_imports(source)
    assert fixed.startswith("from os import *\nfrom typing import Dict\n") and len(notes) == 1
    with pytest.raises(AnswerFormatError, match="os"):
        accept_skeleton(fixed, "A")


def test_source_without_star_imports_or_that_does_not_parse_is_unchanged():
    for source in ("from typing import Dict\n\nx: Dict = {}\n", "from typing import *\ndef (:\n"):
        assert explicit_star_imports(source) == (source, [])
