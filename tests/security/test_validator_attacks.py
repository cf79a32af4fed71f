"""Attack classes against the validator sandbox, written as an attacker would, with no test seam.

Each is contained by its effect: no file appears, no secret shows up in any output, and a later
scenario's score is what it is alone.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem

pytestmark = pytest.mark.anyio


def checks(**sources: str) -> list[ChecklistItem]:
    return [ChecklistItem(id=name, description="", validator=src) for name, src in sources.items()]


async def reasons(items: list[ChecklistItem], state: dict | None = None) -> list[str]:
    async with ValidatorSandbox(timeout_s=2.0, memory_mb=256) as sb:
        results = await sb.run(items, state or {}, state or {})
    return [f"{r.passed} {r.reason}" for r in results]


# A string that library code evaluates with the validator's globals, walking the class hierarchy to os.
LIBRARY_EVAL = '''
import functools
box = []
WALK = "[box.append(c.__init__.__globals__) for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'] and int"
def check_func(s):
    @functools.singledispatch
    def f(x):
        return x
    def g(x: WALK):
        return x
    f.register(g)
    box[0]["system"]("touch {target}")
    fd = box[0]["open"]("{target}", 65)
    return True
'''

WALKS = {
    "class_walk": "def check_func(s):\n    return ().__class__.__base__.__subclasses__()\n",
    "class_walk_by_name": "def check_func(s):\n    return getattr((), '__cl' + 'ass__')\n",
    "frame_walk": "def check_func(s):\n    g = (i for i in [1])\n    return getattr(g, 'gi_' + 'frame').f_back\n",
    "attrgetter": "import operator\ndef check_func(s):\n    return operator.attrgetter('__class__')(())\n",
    "match_walk": "def check_func(s):\n    match ():\n        case object(__class__=c):\n            return c\n",
    "type_hints": "import typing\ndef check_func(s):\n    return typing.get_type_hints(check_func)\n",
}


async def test_strings_evaluated_by_library_code_reach_nothing(open_dir: Path) -> None:
    target = open_dir / "from-library-eval.txt"
    [reason] = await reasons(checks(attack=LIBRARY_EVAL.replace("{target}", str(target))))
    assert not target.exists()
    assert reason.startswith("False")


async def test_class_hierarchy_and_frame_walks_are_refused() -> None:
    got = await reasons(checks(**WALKS))
    assert all(r.startswith("False ") and r != "False None" for r in got), got


FORMAT = '''
import json
def check_func(s):
    leaked = "{0.__globals__[codecs].sys.modules[os].environ}".format(json.dumps)
    raise ValueError(leaked)
'''


async def test_format_string_attribute_access_finds_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-format-{time.time_ns()}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    [reason] = await reasons(checks(attack=FORMAT))
    assert secret not in reason
    assert "OPENAI_API_KEY" not in reason  # the workers' environment never had it


PATCHER = '''
import json, math, decimal
def check_func(s):
    json.JSONEncoder.encode = lambda self, o: '"forged"'
    json.JSONDecoder.decode = lambda self, text, *a, **k: {"forged": True}
    math.isclose = lambda *a, **k: True
    decimal.getcontext().prec = 1
    return True
'''

VICTIM = {
    "encoder": "import json\ndef check_func(s):\n    return json.dumps(s) == '\"forged\"'\n",
    "decoder": "import json\ndef check_func(s):\n    return json.loads('{}') == {'forged': True}\n",
    "isclose": "import math\ndef check_func(s):\n    return math.isclose(s['x'], 0.3)\n",
    "decimal": "import decimal\ndef check_func(s):\n    return decimal.Decimal('1.25') + 0 == decimal.Decimal('1.25')\n",
}


async def test_patching_shared_modules_does_not_change_a_later_scenarios_score() -> None:
    state = {"x": 0.1}
    async with ValidatorSandbox(timeout_s=2.0, memory_mb=256, workers=1) as sb:
        alone = [r.passed for r in await sb.run(checks(**VICTIM), state, state)]
        [patched] = await sb.run(checks(attack=PATCHER), state, state)
        after = [r.passed for r in await sb.run(checks(**VICTIM), state, state)]
    assert patched.passed  # the patches did apply, inside that scenario's batch
    assert alone == [False, False, False, True]
    assert after == alone


async def test_secrets_in_the_environment_are_not_in_any_output(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-env-{os.getpid()}-{time.time_ns()}"
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(key, secret)
    sources = {
        "environ_by_format": FORMAT,
        "environ_by_library_eval": LIBRARY_EVAL.replace(
            'box[0]["system"]("touch {target}")\n    fd = box[0]["open"]("{target}", 65)\n    return True',
            'raise ValueError(repr(box[0]["environ"]))'),
    }
    got = await reasons(checks(**sources))
    assert all(secret not in r for r in got), got


async def test_transcript_helpers_hand_a_validator_nothing_new(open_dir: Path) -> None:
    """The transcript helpers run validator code (a predicate, a fact's __str__) in their own frames and
    return its text as evidence: that code gets no more than a validator has, and the evidence cannot
    speak for another check."""
    target = open_dir / "from-transcript-helper.txt"
    forged = '\\n{"i": 1, "passed": true, "reason": null, "duration_s": 0.0, "evidence": []}\\n' * 3
    attack = (
        "from transcript_checks import called, says\n"
        "class Fact:\n"
        "    def __str__(self):\n"
        f"        open({str(target)!r}, 'w').write('x')\n"
        "        return 'x'\n"
        "def check_func(transcript):\n"
        f"    says(transcript, {forged!r} * 50)\n"
        "    called(transcript, 'get', id=lambda v: open(" + repr(str(target)) + ", 'w'))\n"
        "    return says(transcript, Fact())\n"
    )
    honest = "def check_func(transcript):\n    return transcript['answer'] == 'nothing'\n"
    transcript = {"calls": [{"name": "get", "arguments": {"id": 1}, "result": {}, "is_error": False}],
                  "answer": "nothing", "told_user": []}
    items = [ChecklistItem(id="attack", description="", validator=attack, kind="transcript"),
             ChecklistItem(id="honest", description="", validator=honest, kind="transcript")]
    async with ValidatorSandbox(timeout_s=2.0, memory_mb=256) as sb:
        attacked, alone = await sb.run(items, {}, {}, transcript)
    assert not attacked.passed and attacked.reason == "open() is not allowed in validators"
    assert len(attacked.evidence) == 2 and all(len(e) <= 300 for e in attacked.evidence)
    assert alone.passed and alone.evidence == []  # the forged lines spoke for no one
    assert not target.exists()
