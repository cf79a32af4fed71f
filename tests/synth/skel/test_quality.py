"""The dual-agent check loop, driven against an in-process fake episode (fast unit tests)."""

from __future__ import annotations

import pytest
from mcp.types import CallToolResult, TextContent

from envscaler_mcp._outcome import read_result
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.skeleton.build import EnvMeta, build_skeleton
from envscaler_mcp.synth._common_diff import state_diff
from envscaler_mcp.synth.llm import UsageMeter
from envscaler_mcp.synth.skel.assemble import method_with_helpers
from envscaler_mcp.synth.skel.codecheck import accept_method
from envscaler_mcp.synth.skel.parsers import parse_initial_state, parse_method
from envscaler_mcp.synth.skel.quality import (
    QualityOptions,
    dual_agent_check,
    dump_state,
    summarize,
)

from ..fixtures.fake_episode import FakeLauncher
from ..fixtures.skel_router import ANSWERS, fixture_class

pytestmark = pytest.mark.anyio


def library():
    cls = fixture_class("library")
    source = cls.source
    for op in ("get_book", "list_member_loans", "checkout_book", "return_book"):
        _, source, _ = accept_method(parse_method((ANSWERS / f"library/method_{op}.md").read_text()).code, op, source,
                                     cls.class_name)
    meta = EnvMeta(id="library", name="Library", summary="Library loan management system", introduction="A library.",
                   class_name=cls.class_name)
    state = parse_initial_state((ANSWERS / "library/init_state.md").read_text()).state
    return build_skeleton(meta, source, state, strict=True), state


async def test_every_tool_is_covered_and_calls_run_through_the_episode(router, provider):
    skeleton, state = library()
    launcher = FakeLauncher()
    checks = await dual_agent_check(skeleton, state, provider, provider, QualityOptions(), UsageMeter(), launcher)
    assert len(checks) == 8 and {c.tool for c in checks} == {t.name for t in skeleton.tools}
    assert all(c.verdict == "pass" for c in checks)
    assert [name for name, _ in launcher.episodes[0].calls][:4] == ["get_book", "list_member_loans", "checkout_book",
                                                                    "return_book"]
    report = summarize(checks, 0.85)
    assert (report.passed, report.score, report.threshold) == (8, 1.0, 0.85)


async def test_tester_must_cover_untested_tools_and_respect_the_cap(router):
    skeleton, state = library()
    answers = iter(["# Tool\nget_book\n# Arguments\n{\"book_id\": \"B1\"}\n# Case\npositive"] * 100)
    prompts: list[str] = []

    def script(messages, tools):
        system = messages[0].content
        if "exploratory test engineer" in system:
            prompts.append(messages[-1].content)
            return next(answers)
        return router(messages, tools)

    provider = MockProvider([script], repeat_last=True)
    options = QualityOptions(calls=4, per_tool_cap=2, retries=1)
    checks = await dual_agent_check(skeleton, state, provider, provider, options, UsageMeter(), FakeLauncher())
    # round 1 may pick get_book; from then on 3 tools remain for 3 rounds, so get_book is refused each time
    # and the tester (always answering get_book) gives up after its retries
    assert [c.tool for c in checks] == ["get_book"]
    assert any("pick a tool without a positive test yet" in p for p in prompts)


async def test_every_tool_gets_a_positive_test(router):
    """A tester that only ever probes with bad arguments is sent back once the rounds left only just suffice
    for a positive test of each tool; the schema then admits only positive cases of those tools."""
    skeleton, state = library()
    tools = [t.name for t in skeleton.tools]
    negative = iter([f"# Tool\n{tools[0]}\n# Arguments\n{{}}\n# Case\nnegative"] * 100)
    schemas: list[dict] = []

    def script(messages, _tools, settings=None):
        if "exploratory test engineer" in messages[0].content:
            return next(negative)
        return router(messages, _tools)

    provider = MockProvider([script], repeat_last=True)
    original = provider.complete

    async def complete(messages, tools_=None, settings=None):
        if "exploratory test engineer" in messages[0].content and settings is not None:
            schemas.append(settings.json_schema)
        return await original(messages, tools_, settings)

    provider.complete = complete  # type: ignore[method-assign]
    options = QualityOptions(calls=len(tools), per_tool_cap=10, retries=1)
    checks = await dual_agent_check(skeleton, state, provider, provider, options, UsageMeter(), FakeLauncher())
    assert checks == []  # from round 1 every tool still needs its positive test: every negative pick refused
    assert schemas and all(s["properties"]["case"]["enum"] == ["positive"] for s in schemas)


async def test_unknown_tool_is_sent_back_and_an_unjudged_call_is_not_counted(router):
    skeleton, state = library()
    tester_answers = iter(["# Tool\nfly_away\n# Arguments\n{}\n# Case\npositive",
                           "# Tool\nget_book\n# Arguments\n{\"book_id\": \"B1\"}\n# Case\npositive"])

    def script(messages, tools):
        system = messages[0].content
        if "exploratory test engineer" in system:
            return next(tester_answers)
        if "You review one call" in system:
            return "no verdict here"
        return router(messages, tools)

    provider = MockProvider([script], repeat_last=True)
    meter = UsageMeter()
    checks = await dual_agent_check(skeleton, state, provider, provider, QualityOptions(calls=1, retries=1), meter,
                                    FakeLauncher())
    assert checks == []  # the checker never answered in format: the call is not counted
    assert meter.by_seat["tester"].calls == 2 and meter.by_seat["checker"].calls == 2
    assert summarize(checks, 0.85).score is None


def test_result_payload_and_state_diff():
    result = read_result(CallToolResult(content=[TextContent(type="text", text='{"success": false, "error": "x"}')],
                                        is_error=True))
    assert (result.value, result.is_error) == ({"success": False, "error": "x"}, True)
    plain = read_result(CallToolResult(content=[TextContent(type="text", text="Invalid arguments: x")], is_error=True))
    assert (plain.value, plain.is_error) == ("Invalid arguments: x", True)
    diff = state_diff({"a": {"x": 1, "y": [1, 2]}, "b": 1}, {"a": {"x": 2, "y": [1, 3], "z": 0}, "b": 1})
    assert diff == ["a.x: 1 -> 2", "a.y[1]: 2 -> 3", "a.z: (absent) -> 0"]
    assert state_diff({}, {}) == []


def test_checker_sees_the_helpers_a_method_calls():
    skeleton, _ = library()
    text = method_with_helpers(skeleton.class_source, skeleton.class_name, "checkout_book")
    assert text.startswith("def checkout_book") and "def _next_loan_id" in text


def test_dump_state_is_json_with_one_line_per_record():
    import json

    state = {"books": {"B1": {"t": "Dune"}, "B2": {"t": "Emma"}}, "today": "2025-01-01", "tags": [], "empty": {}}
    text = dump_state(state)
    assert json.loads(text) == state
    assert '  "B1": {"t": "Dune"},' in text.splitlines()


async def test_a_repair_that_scores_worse_is_reverted(tmp_path, router, provider):
    from envscaler_mcp.synth.skel.checkstage import CheckOptions, check_environment
    from envscaler_mcp.synth.skel.mine import MineOptions, run_mine
    from envscaler_mcp.synth.skel.modeling import ModelOptions, run_model
    from envscaler_mcp.synth.skel.pipeline import load_models, load_topics

    from ..conftest import FIXTURES

    out = tmp_path / "out"
    await run_mine(FIXTURES / "skel_corpus.jsonl", out, provider, MineOptions())
    await run_model(load_topics(out), out, provider, ModelOptions())
    clinic = next(r for r in load_models(out) if r.env_id.startswith("clinic"))
    repaired = {"done": False}

    def script(messages, tools):
        system = messages[0].content
        if "You fix one method" in system:
            repaired["done"] = True
        if "You review one call" in system and repaired["done"]:
            return "# Verdict\nFail\n# Reason\nthe reviewer is in a bad mood"
        return router(messages, tools)

    judge = MockProvider([script], repeat_last=True)
    record, skeleton = await check_environment(clinic, judge, judge, judge, CheckOptions(), UsageMeter(),
                                               FakeLauncher())
    assert record.final_report == record.first_report
    assert record.final_report.repaired_tools == [] and record.final_report.score == 0.75
    assert not record.kept and skeleton is None
    assert any("reverted" in n for n in record.notes)


def test_the_verdict_combines_the_checkers_expectation_with_what_the_call_did() -> None:
    from envscaler_mcp.synth.skel.parsers import CheckerAnswer
    from envscaler_mcp.synth.skel.quality import call_outcome, verdict_of

    refused = {"success": False, "error": "no such order"}
    assert call_outcome(refused, False) == "refused" and call_outcome({"success": True}, False) == "succeeded"
    assert call_outcome("Tool 'x' failed with KeyError: 'a'. The state was left unchanged.", True) == "crashed"
    assert call_outcome("Invalid arguments for tool 'x': 'a' is a required property. Nothing was changed.",
                        True) == "invalid"

    def answer(expected: str | None, verdict: str = "fail") -> CheckerAnswer:
        return CheckerAnswer(expected=expected, verdict=verdict, reason="r")

    # a small model's "Fail" on a correctly refused call does not stand: it expected the refusal that came
    assert verdict_of(answer("refusal"), "refused")[0] == "pass"
    assert verdict_of(answer("refusal", "pass"), "succeeded")[0] == "fail"
    assert verdict_of(answer("success", "pass"), "refused")[0] == "fail"
    assert verdict_of(answer("success", "warning"), "succeeded")[0] == "warning"  # content: the checker's call
    assert verdict_of(answer("success", "pass"), "crashed")[0] == "fail"  # a method must never raise
    assert verdict_of(answer(None, "pass"), "refused")[0] == "pass"  # no expectation given: its own verdict
