"""One answer to "did this call succeed", under each environment's success convention (_outcome.py), and the
transcript checks reading it from the transcript."""

from __future__ import annotations

import pytest
from mcp.types import CallToolResult, ImageContent, TextContent

from envscaler_mcp._outcome import call_failure, call_succeeded, guess_convention, read_result
from envscaler_mcp.transcript import checks as transcript_checks
from envscaler_mcp.transcript import evidence
from envscaler_mcp.transcript.record import call_record, make_transcript

CASES = [  # result, is_error, {convention: succeeded}
    ({"success": True, "data": 1}, False, {"envscaler": True, "error-field": True, "no-error": True}),
    ({"success": False, "error": "no"}, False, {"envscaler": False, "error-field": False, "no-error": True}),
    ({"success": "yes"}, False, {"envscaler": False, "error-field": False, "no-error": True}),
    ({"status": "Ticket 1 closed"}, False, {"envscaler": False, "error-field": True, "no-error": True}),
    ({"error": "Ticket 9 not found"}, False, {"envscaler": False, "error-field": False, "no-error": True}),
    ({"errors": ["bad id"]}, False, {"envscaler": False, "error-field": False, "no-error": True}),
    ({"error": None, "value": 3}, False, {"envscaler": False, "error-field": True, "no-error": True}),
    ({"error": ""}, False, {"envscaler": False, "error-field": True, "no-error": True}),
    ("plain text", False, {"envscaler": False, "error-field": True, "no-error": True}),
    ([1, 2], False, {"envscaler": False, "error-field": True, "no-error": True}),
    ({"success": True}, True, {"envscaler": False, "error-field": False, "no-error": False}),
    ("Invalid arguments for tool", True, {"envscaler": False, "error-field": False, "no-error": False}),
]


@pytest.mark.parametrize(("result", "is_error", "expected"), CASES)
def test_each_convention(result: object, is_error: bool, expected: dict[str, bool]) -> None:
    for convention, ok in expected.items():
        assert call_succeeded(result, is_error, convention) is ok, convention
        assert (call_failure(result, is_error, convention) is None) is ok


def test_failure_reasons_name_what_failed() -> None:
    assert call_failure({"success": False, "error": "Spot taken"}, False) == "success is False: Spot taken"
    assert call_failure({"error": "Ticket 9 not found"}, False, "error-field") == "error: Ticket 9 not found"
    assert call_failure("boom", True, "no-error") == "is_error: boom"
    assert call_failure({"data": 1}, False).startswith("result has no 'success' field")
    with pytest.raises(ValueError, match="unknown success convention"):
        call_failure({}, False, "lenient")


def test_guess_from_the_code() -> None:
    assert guess_convention('def f(self):\n    return {"success": True}\n') == "envscaler"
    assert guess_convention("def f(self):\n    return {'success': True}\n") == "envscaler"
    assert guess_convention('def f(self):\n    return {"error": "x"}\n') == "error-field"


def _called(convention: str, result: object, is_error: bool = False) -> bool:
    transcript = make_transcript([call_record("close_ticket", {"ticket_id": 1}, "", is_error)], "done",
                                 convention=convention)
    transcript["calls"][0]["result"] = result
    evidence.begin()
    return transcript_checks.called(transcript, "close_ticket", ticket_id=1)


def test_transcript_checks_read_the_convention_of_the_transcript() -> None:
    assert "success_convention" not in make_transcript([], "")  # the default is not written
    assert make_transcript([], "", convention="error-field")["success_convention"] == "error-field"
    assert _called("envscaler", {"success": True}) and not _called("envscaler", {"status": "closed"})
    assert _called("error-field", {"status": "closed"}) and not _called("error-field", {"error": "not found"})
    assert _called("no-error", {"error": "not found"}) and not _called("no-error", {"status": "closed"}, True)
    assert transcript_checks.called(make_transcript([call_record("close_ticket", {}, "{}", False)], "", convention="no-error"),
                                    "close_ticket", ok=False)


@pytest.mark.anyio
async def test_the_sandboxed_transcript_check_reads_the_convention() -> None:
    from envscaler_mcp.sandbox.validators import ValidatorSandbox
    from envscaler_mcp.scenario.models import ChecklistItem

    item = ChecklistItem(id="t1", description="closed ticket 1", kind="transcript", validator=(
        "from transcript_checks import called\n"
        "def check_func(transcript):\n    return called(transcript, 'close_ticket', ticket_id=1)\n"))
    closed = [call_record("close_ticket", {"ticket_id": 1}, '{"status": "Ticket 1 closed"}', False)]
    missing = [call_record("close_ticket", {"ticket_id": 1}, '{"error": "Ticket 1 not found"}', False)]
    async with ValidatorSandbox(timeout_s=2.0, workers=1) as sandbox:
        verdicts = [
            (await sandbox.run([item], {}, {}, make_transcript(calls, "", convention=convention)))[0].passed
            for calls, convention in [(closed, "error-field"), (missing, "error-field"), (closed, "envscaler")]]
    assert verdicts == [True, False, False]


# Reading an MCP result (read_result): the cases where the replay, the quality check and the agent's episode
# used to read one result differently.

def test_text_blocks_are_joined_by_newlines_and_other_blocks_skipped() -> None:
    # the replay judged success on the blocks joined by spaces and recorded them joined by newlines, an image
    # block adding an empty line; the quality check skipped empty blocks
    result = CallToolResult(content=[TextContent(type="text", text='{"success": false,'),
                                     ImageContent(type="image", data="aGk=", mime_type="image/png"),
                                     TextContent(type="text", text='"error": "no such order"}')])
    read = read_result(result)
    assert read.text == '{"success": false,\n"error": "no such order"}'
    assert read.value == {"success": False, "error": "no such order"}
    assert read.failure() == "success is False: no such order"


def test_the_text_decides_when_the_structured_content_differs() -> None:
    # an SDK server wraps a list in {"result": ...}: the replay and the quality check read the wrapper, the agent's
    # transcript the list
    read = read_result(CallToolResult(content=[TextContent(type="text", text='[{"id": 1}]')],
                                      structured_content={"result": [{"id": 1}]}))
    assert read.value == [{"id": 1}] and read.failure("error-field") is None
    assert read.failure("envscaler") is not None  # a list has no success field


def test_a_result_without_text_blocks_is_its_structured_content() -> None:
    read = read_result(CallToolResult(content=[], structured_content={"success": True, "data": "café"}))
    assert read.text == '{"success": true, "data": "café"}' and read.failure() is None
    assert read_result(CallToolResult(content=[])).text == "null"


def test_an_error_result_is_described_by_its_text_and_never_succeeds() -> None:
    text = "Invalid arguments for tool 'x': 'a' is a required property. Nothing was changed."
    read = read_result(CallToolResult(content=[TextContent(type="text", text=text)],
                                      structured_content={"success": True}, is_error=True))
    assert read.is_error and read.value == text
    for convention in ("envscaler", "error-field", "no-error"):
        assert read.failure(convention) == f"is_error: {text}"


def test_text_nested_past_the_recursion_limit_stays_text() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert read_result(CallToolResult(content=[TextContent(type="text", text=deep)])).value == deep
