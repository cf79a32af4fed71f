"""The whole SkelBuilder pipeline on the hand-written fixture corpus, offline (mock provider + fixtures).

The check stage runs every environment as a real MCP server over HTTP (launch_server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp._io import iter_jsonl, read_json
from envscaler_mcp.errors import ProviderError, UsageError
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.skeleton.build import build_skeleton_from_dir
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth.skel.checkstage import CheckOptions
from envscaler_mcp.synth.skel.pipeline import Seats, SkelConfig, run_skel

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def seats(provider) -> Seats:
    return Seats(generator=provider, tester=provider, checker=provider)


def fixture_config(**fields) -> SkelConfig:
    """The fixture environments have four tools each: keep an environment with four proven to work."""
    return SkelConfig(check=CheckOptions(min_tools=4), **fields)


def jsonl(path: Path) -> list[dict]:
    return [r for _, r in iter_jsonl(path)] if path.exists() else []


async def test_full_run(tmp_path, provider, router, corpus):
    out = tmp_path / "out"
    summary = await run_skel(fixture_config(out=out, tasks=corpus), seats(provider))

    # mine: cheap filters, judge, thresholds, de-duplication with the merges recorded
    judged = {r["task"][:20]: r for r in jsonl(out / "mine" / "judged.jsonl")}
    assert len(judged) == 7
    assert judged["Tell me a funny joke"]["status"] == "rejected"
    report = read_json(out / "mine" / "dedupe.json")
    assert report["rejected_by_judge"] == 1 and report["below_threshold"] == 1 and report["selected"] == 3
    topics = {t["env_id"]: t for t in jsonl(out / "mine" / "topics.jsonl")}
    assert set(topics) == {"library_loan_management_system", "clinic_appointment_scheduling_system",
                           "city_parking_permit_office"}
    assert len(topics["library_loan_management_system"]["merged"]) == 2  # exact summary + near-duplicate

    # model: parking dropped for code the static checks refuse, after the bounded retries
    dropped = jsonl(out / "model" / "dropped.jsonl")
    assert [(d["env_id"], d["step"]) for d in dropped] == [("city_parking_permit_office", "skel/method")]
    assert "os" in dropped[0]["reason"]
    assert router.calls["method"] == 4 + 1 + 4 + 1 + 3  # library (one retry), clinic, parking (1 + 3 attempts)

    # check: library passes at once; clinic fails, is repaired, and passes
    lib = read_json(out / "check" / "envs" / "library_loan_management_system.json")
    assert lib["kept"] and lib["first_report"]["failed"] == 0 and lib["final_report"]["score"] == 1.0
    clinic = read_json(out / "check" / "envs" / "clinic_appointment_scheduling_system.json")
    assert clinic["first_report"]["failed"] == 2 and clinic["first_report"]["score"] == 0.75
    assert clinic["final_report"]["repaired_tools"] == ["cancel_appointment"]
    assert clinic["kept"] and clinic["final_report"]["failed"] == 0
    # the broken cancel answered success without cancelling anything: found by the tool coverage, repaired
    first = {t["tool"]: t["status"] for t in clinic["first_report"]["tools"]}
    assert first["cancel_appointment"] == "never succeeds" and list(first.values()).count("works") == 3
    assert {t["status"] for t in clinic["final_report"]["tools"]} == {"works"}

    for env_id in ("library_loan_management_system", "clinic_appointment_scheduling_system"):
        skeleton = EnvSkeleton.model_validate(read_json(out / "environments" / env_id / "skeleton.json"))
        assert skeleton.provenance.source == "synthesized" and skeleton.provenance.prompt_version.startswith("skel-1+")
        assert skeleton.provenance.models["checker"] == "mock/skel-router"
        assert skeleton.provenance.usage.calls > 0 and skeleton.quality is not None
        tools = {t.name for t in skeleton.tools}
        assert len(tools) == 4 and skeleton.default_state
        checked = {c.tool for c in skeleton.quality.checks}
        assert checked == tools  # every tool covered
        cases = {(c.tool, c.case) for c in skeleton.quality.checks}
        assert len(cases) == 8  # one positive and one negative per tool
        # the same checks as the bundled catalog: rebuild it from authoring files
        folder = tmp_path / "authoring" / env_id
        folder.mkdir(parents=True)
        (folder / "environment.py").write_text(skeleton.class_source)
        (folder / "default_state.json").write_text(json.dumps(skeleton.default_state))
        (folder / "meta.json").write_text(json.dumps({
            "id": skeleton.id, "name": skeleton.name, "summary": skeleton.summary,
            "introduction": skeleton.introduction, "class_name": skeleton.class_name,
            "entities": [e.model_dump() for e in skeleton.entities], "rules": skeleton.rules}))
        rebuilt = build_skeleton_from_dir(folder)
        assert rebuilt.tools == skeleton.tools and rebuilt.state == skeleton.state
    repaired = EnvSkeleton.model_validate(
        read_json(out / "environments" / "clinic_appointment_scheduling_system" / "skeleton.json"))
    assert 'appointment["status"] = "cancelled"' in repaired.class_source

    # usage totals per stage and per environment
    assert summary.stages["mine"].calls == 7 + 6  # 7 judged, 6 of them stateful and summary.stages["model"].calls > 0
    statuses = {e.env_id: e.status for e in summary.environments}
    assert statuses == {"library_loan_management_system": "kept", "clinic_appointment_scheduling_system": "kept",
                        "city_parking_permit_office": "dropped in model (skel/method)"}
    assert (out / "summary.json").exists()

    # rerunning finished work refuses without --resume and makes no model call with it
    with pytest.raises(UsageError, match="--resume"):
        await run_skel(fixture_config(out=out, tasks=corpus), seats(provider))
    before = len(provider.requests)
    await run_skel(fixture_config(out=out, tasks=corpus, resume=True), seats(provider))
    assert len(provider.requests) == before


class CrashAfter:
    """Wraps the router: raises a provider error once `limit` model calls have been answered."""

    def __init__(self, router, limit: int) -> None:
        self.router, self.limit, self.count = router, limit, 0

    def __call__(self, messages, tools):
        self.count += 1
        if self.count > self.limit:
            raise ProviderError("simulated outage")
        return self.router(messages, tools)


async def test_crash_mid_stage_keeps_finished_items_and_resume_finishes(tmp_path, router, corpus):
    out = tmp_path / "out"
    crashing = MockProvider([CrashAfter(router, 5)], repeat_last=True, spec="mock/skel-router")
    config = fixture_config(out=out, tasks=corpus, stage="mine")
    config.mine.concurrency = 1
    with pytest.raises(ProviderError):
        await run_skel(config, seats(crashing))
    finished = jsonl(out / "mine" / "judged.jsonl")
    assert 1 <= len(finished) < 7  # what finished before the crash is on disk
    done_ids = {r["task_id"] for r in finished}

    provider = MockProvider([router], repeat_last=True, spec="mock/skel-router")
    router.seen_tasks.clear()
    config = fixture_config(out=out, tasks=corpus, stage="mine", resume=True)
    await run_skel(config, seats(provider))
    records = jsonl(out / "mine" / "judged.jsonl")
    assert len(records) == 7 and len({r["task_id"] for r in records}) == 7
    redone = {r["task_id"] for r in records[len(finished):]}
    assert not redone & done_ids  # finished tasks were not asked again

    # the next stages run on their own, from what the mine stage left on disk
    config = fixture_config(out=out, stage="model", resume=True)
    await run_skel(config, seats(provider))
    assert len(list((out / "model" / "envs").glob("*.json"))) == 2
    with pytest.raises(UsageError, match="--stage mine"):
        await run_skel(fixture_config(out=tmp_path / "empty", stage="model"), seats(provider))


async def test_torn_last_line_is_dropped_and_redone(tmp_path, provider, corpus):
    out = tmp_path / "out"
    await run_skel(fixture_config(out=out, tasks=corpus, stage="mine"), seats(provider))
    path = out / "mine" / "judged.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # a write cut short
    calls = len(provider.requests)
    await run_skel(fixture_config(out=out, tasks=corpus, stage="mine", resume=True), seats(provider))
    assert len(jsonl(path)) == 7 and len(provider.requests) > calls
    assert all(json.loads(line) for line in path.read_text().splitlines())


async def test_crash_in_the_model_stage_keeps_finished_environments(tmp_path, router, corpus):
    out = tmp_path / "out"
    provider = MockProvider([router], repeat_last=True, spec="mock/skel-router")
    await run_skel(fixture_config(out=out, tasks=corpus, stage="mine"), seats(provider))
    # the library environment takes 9 calls (state answered on the second try, 5 method answers)
    crashing = MockProvider([CrashAfter(router, 11)], repeat_last=True, spec="mock/skel-router")
    config = fixture_config(out=out, stage="model", resume=True)
    config.model.concurrency = 1
    with pytest.raises(ProviderError, match="simulated outage"):
        await run_skel(config, seats(crashing))
    assert [p.stem for p in (out / "model" / "envs").glob("*.json")] == ["library_loan_management_system"]
    router.calls.clear()
    await run_skel(fixture_config(out=out, stage="model", resume=True), seats(provider))
    assert sorted(p.stem for p in (out / "model" / "envs").glob("*.json")) == [
        "clinic_appointment_scheduling_system", "library_loan_management_system"]
    assert router.calls["method"] == 4 + 1 + 3  # clinic and parking only; the library was not redone


async def test_the_summary_has_the_stage_funnel(tmp_path, provider, corpus):
    from envscaler_mcp.synth.skel.summary import print_summary

    out = tmp_path / "out"
    summary = await run_skel(fixture_config(out=out, tasks=corpus), seats(provider))
    rows = {r.step: r for r in summary.yields}
    assert (rows["mine: judged stateful"].entered, rows["mine: judged stateful"].passed) == (7, 6)
    assert rows["mine: judged stateful"].drops == {"judge (not stateful)": 1}
    assert rows["mine: topic selected"].passed == 3 and rows["mine: topic selected"].drops["scores below threshold"] == 1
    model = rows["model: skeleton built"]
    assert (model.entered, model.passed, model.drops) == (3, 2, {"skel/method (answer)": 1})
    assert (rows["check: kept"].entered, rows["check: kept"].passed) == (2, 2)
    assert read_json(out / "summary.json")["yields"][2]["drops"] == {"skel/method (answer)": 1}
    from rich.console import Console
    console = Console(record=True, width=200)
    print_summary(summary, console)
    text = console.export_text()
    assert "Yield per stage" in text and "skel/method (answer) 1" in text
