"""One BFCL task -> a multi-turn Scenario; one combination of classes -> an EnvSkeleton.

BFCL's checker (multi_turn_eval/multi_turn_checker.py) judges every turn that has ground truth by two checks,
and this conversion gives each its counterpart:
* the state check: every involved class's public attributes equal the ground truth's after the turn -> our
  state check after every turn (Reference.check_turn), with every private attribute (`*._*`) a free field; a
  turn without ground truth is not judged by BFCL, and says `check_state: false`;
* the response check: every result of the turn's ground-truth calls is among the results of the model's
  calls so far (order-free, each call answering one), and the model made some call in that turn -> a
  transcript item judged at that turn's end (a call's `turn` in the transcript says when it was made).
"""

from __future__ import annotations

import json
from typing import Any

from envscaler_mcp.interop.bfcl.ground_truth import Execution
from envscaler_mcp.interop.bfcl.source import ADDED_FUNCTIONS_PROMPT, ATTRIBUTION
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall, Turn
from envscaler_mcp.skeleton.models import EnvSkeleton, FreeField, Provenance, StateAttribute, ToolSpec

PRIVATE = FreeField(path="*._*", reason="private bookkeeping BFCL's checker does not compare (the current "
                    "directory, seeded random generators)")

RESPONSE_CHECK = '''import json

EXPECTED = {expected}
TURN = {turn}


def _readings(call):
    """The texts BFCL's checker could have recorded for this call: json.dumps of a returned dict, or the text
    the environment passes on for a value that was not one ({{"result": text}})."""
    result = call["result"]
    if call["is_error"]:
        return []
    if isinstance(result, dict):
        texts = [json.dumps(result)]
        if list(result) == ["result"] and isinstance(result["result"], str):
            texts.append(result["result"])
        return texts
    return [result] if isinstance(result, str) else [json.dumps(result)]


def check_func(transcript):
    calls = transcript["calls"]
    # BFCL fails a turn that has ground truth but no call of the model's (where the transcript tells turns apart)
    if any("turn" in call for call in calls) and not any(call.get("turn") == TURN for call in calls):
        return False
    readings = [_readings(call) for call in calls]
    answered_by = {{}}

    def place(wanted, tried):
        for n, texts in enumerate(readings):
            if n not in tried and EXPECTED[wanted] in texts:
                tried.add(n)
                if n not in answered_by or place(answered_by[n], tried):
                    answered_by[n] = wanted
                    return True
        return False

    return all(place(wanted, set()) for wanted in range(len(EXPECTED)))
'''


def response_check(expected: list[str], turn: int) -> str:
    """The validator of turn `turn`'s (0-based) response check: the agent made some call in that turn, and every
    expected text is answered by a distinct call so far."""
    return RESPONSE_CHECK.format(expected=json.dumps(expected, ensure_ascii=False), turn=turn)


def turn_text(messages: list[dict[str, Any]], adds_functions: bool) -> str:
    """What the user says at a turn: its messages' contents, or BFCL's prompt for a turn that adds functions."""
    texts = [str(m.get("content", "")) for m in messages if m.get("role", "user") == "user"]
    if not texts and adds_functions:
        return ADDED_FUNCTIONS_PROMPT
    if not texts:
        raise ValueError("a turn without a user message that adds no function")
    return "\n\n".join(texts)


def scenario_from_task(task: dict[str, Any], category: str, env: str, turns: list[list[ToolCall]],
                       execution: Execution, version: str) -> Scenario:
    """The scenario of one BFCL task; `turns` its parsed ground truth, `execution` what that did."""
    missed = {int(k): list(v) for k, v in (task.get("missed_function") or {}).items()}
    checklist: list[ChecklistItem] = []
    out_turns: list[Turn] = []
    for n, (messages, calls) in enumerate(zip(task["question"], turns, strict=True)):
        checks = []
        if calls:
            item = ChecklistItem(
                id=f"turn{n + 1}",
                description=f"Has every result of turn {n + 1}'s reference calls come back from the agent's calls "
                            "by the end of that turn (BFCL's response check)?",
                validator=response_check(execution.outputs[n], n), kind="transcript")
            checklist.append(item)
            checks.append(item.id)
        out_turns.append(Turn(user=turn_text(messages, n in missed), tools_added=missed.get(n, []),
                              reference=calls, checks=checks, check_state=bool(calls)))
    task_id = str(task["id"])
    first = out_turns[0].user.splitlines()[0] if out_turns else ""
    scenario = Scenario(
        env_id=env, title=f"{task_id}: {first[:70]}", task="\n\n".join(t.user for t in out_turns),
        initial_state=execution.initial_state, checklist=checklist, turns=out_turns,
        provenance=Provenance(source="bfcl-import", source_id=task_id,
                              notes=[ATTRIBUTION.format(version=version)]),
        extra={"bfcl": {"id": task_id, "category": category, "involved_classes": task["involved_classes"],
                        "excluded_function": task.get("excluded_function", []), "path": task.get("path", [])}},
    )
    return scenario.with_id()


def skeleton_for(env: str, class_name: str, classes: list[str], module_text: str, tools: list[ToolSpec],
                 default_state: dict[str, Any], version: str, requirements: list[str] | None = None) -> EnvSkeleton:
    """The environment of one combination of BFCL classes (`requirements`: the packages their modules import)."""
    names = ", ".join(sorted(classes))
    state = [StateAttribute(name=name, type="dict[str, Any]", json_schema={"type": "object"},
                            description=f"BFCL's {name} instance: its attributes as JSON (a leading _ marks "
                                        "private bookkeeping)") for name in sorted(classes)]
    # BFCL answers a failed call with {"error": ...} (and TicketAPI with {"success": false}): the error-field
    # convention of `did this call succeed`, where this version of the model has it
    convention = {"success_convention": "error-field"} if "success_convention" in EnvSkeleton.model_fields else {}
    return EnvSkeleton(
        **convention,
        id=env, name=f"BFCL {names}", summary=f"BFCL multi-turn environment: {names}",
        introduction=f"The Berkeley Function Calling Leaderboard's multi-turn classes {names}, run from their own "
                     "code. Their state is kept as JSON between calls; tool results are what BFCL returns.",
        class_name=class_name, class_source=module_text, state=state, tools=tools, default_state=default_state,
        free_fields=[PRIVATE], requirements=requirements or [],
        provenance=Provenance(source="bfcl-import", source_id="+".join(sorted(classes)), notes=[
            ATTRIBUTION.format(version=version),
            "third-party code: not held to the static checks of environment code (it imports random and "
            "subprocess, executes its modules from their sources); it runs confined, in the server and at import, "
            "like any environment code",
        ]),
        extra={"bfcl": {"classes": sorted(classes), "version": version}},
    )
