"""Trajectories of a run as fine-tuning data: OpenAI chat JSONL or LlamaFactory ShareGPT JSONL.

`envscaler-mcp export run RUN_DIR --format openai|sharegpt` calls export_run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args

from envscaler_mcp._io import write_jsonl_atomic
from envscaler_mcp.errors import EnvScalerError, UsageError
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.providers.base import Message, ToolCallRequest
from envscaler_mcp.providers.tools import ERROR_PREFIX  # tool errors reach chat models with this prefix
from envscaler_mcp.report.labels import with_plans

ExportFormat = Literal["openai", "sharegpt"]
FORMATS: tuple[str, ...] = get_args(ExportFormat)
ChecklistFilter = Literal["any", "pass"]
StateCheckFilter = Literal["any", "pass", "not-fail"]
ObservationFilter = StateCheckFilter  # pass: the observation check passed; not-fail: also where it did not apply


def _tool_text(m: Message) -> str:
    return (ERROR_PREFIX + m.content) if m.is_error else m.content


def _call_dict(call: ToolCallRequest) -> dict[str, Any]:
    return {"name": call.name, "arguments": call.arguments}


def to_openai(result: EpisodeResult, *, keep_reasoning: bool = False) -> dict[str, Any]:
    """One trajectory as an OpenAI chat fine-tuning record: {"messages", "tools"}, in the fields OpenAI's chat
    fine-tuning format defines. With keep_reasoning, assistant reasoning is kept as `reasoning_content` (the
    vLLM / Qwen convention, which OpenAI's format does not define). Decision labels are never kept."""
    messages: list[dict[str, Any]] = []
    for m in result.messages:
        if m.role == "tool":
            messages.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": _tool_text(m)})
            continue
        out: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.role == "assistant":
            if m.tool_calls:
                out["content"] = m.content or None
                out["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": json.dumps(c.arguments, ensure_ascii=False),
                        },
                    }
                    for c in m.tool_calls
                ]
            if m.reasoning and keep_reasoning:
                out["reasoning_content"] = m.reasoning
        messages.append(out)
    tools = [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
        }
        for t in result.tools
    ]
    return {"messages": messages, "tools": tools}


def to_sharegpt(result: EpisodeResult, *, keep_reasoning: bool = False) -> dict[str, Any] | None:
    """One trajectory in LlamaFactory's ShareGPT tool format, or None when it has no assistant answer.

    Turns alternate human/observation and gpt/function_call; a turn with several tool calls becomes one
    function_call whose value is a JSON list, answered by one observation (results joined by newlines).
    With keep_reasoning, reasoning is kept as a leading <think>…</think> block. The trajectory is cut after
    its last gpt turn.
    """

    def with_thought(m: Message, text: str) -> str:
        return f"<think>\n{m.reasoning}\n</think>\n\n{text}" if m.reasoning and keep_reasoning else text

    system = ""
    turns: list[dict[str, str]] = []
    pending: list[str] = []
    for m in result.messages:
        if m.role == "system":
            system = m.content
        elif m.role == "tool":
            pending.append(_tool_text(m))
            continue
        if pending:
            turns.append({"from": "observation", "value": "\n".join(pending)})
            pending = []
        if m.role == "user":
            turns.append({"from": "human", "value": m.content})
        elif m.role == "assistant" and m.tool_calls:
            calls = [_call_dict(c) for c in m.tool_calls]
            value = json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)
            turns.append({"from": "function_call", "value": with_thought(m, value)})
        elif m.role == "assistant":
            turns.append({"from": "gpt", "value": with_thought(m, m.content)})
    last_gpt = max((i for i, t in enumerate(turns) if t["from"] == "gpt"), default=-1)
    if last_gpt < 0:
        return None
    tools = [
        {"name": t.name, "description": t.description, "parameters": t.input_schema} for t in result.tools
    ]
    return {
        "conversations": turns[: last_gpt + 1],
        "system": system,
        "tools": json.dumps(tools, ensure_ascii=False),
    }


def select(results: list[EpisodeResult], min_score: float | None, *, checklist: ChecklistFilter = "any",
           state_check: StateCheckFilter = "any", observation: ObservationFilter = "any") -> list[EpisodeResult]:
    """Episodes worth exporting: never infra errors; with min_score, only scored episodes at or above it;
    checklist 'pass': every scorable item passed; state_check 'pass': the state check passed, 'not-fail': it
    passed or was not available; observation the same for the observation check."""
    kept = [r for r in results if r.status != "infra_error"]
    if min_score is not None:
        kept = [r for r in kept if r.score is not None and r.score >= min_score]
    if checklist == "pass":
        kept = [r for r in kept if r.score == 1.0]
    if state_check == "pass":
        kept = [r for r in kept if r.state_check == "pass"]
    elif state_check == "not-fail":
        kept = [r for r in kept if r.state_check != "fail"]
    if observation == "pass":
        kept = [r for r in kept if r.observation.status == "passed"]
    elif observation == "not-fail":
        kept = [r for r in kept if r.observation.status != "failed"]
    return sorted(kept, key=lambda r: (r.env_id, r.scenario_id, r.trial))


class Exported(NamedTuple):
    """What export_run wrote: the file, its records, and the episodes of the run it read."""

    path: Path
    records: int
    episodes: int


class NothingToExport(EnvScalerError):
    """No episode of the run passed the filters (or none could be written in the format): no file is written."""


def export_run(run_dir: Path, fmt: str, min_score: float | None = None, out: Path | None = None, *,
               checklist: ChecklistFilter = "any", state_check: StateCheckFilter = "any",
               observation: ObservationFilter = "any", keep_reasoning: bool = False) -> Exported:
    """Write the run's trajectories as JSONL in `fmt` ('openai' or 'sharegpt'); say what was written.

    Default output: RUN_DIR/export-<fmt>.jsonl. `checklist`, `state_check` and `observation` filter as in
    `select`; `keep_reasoning` keeps the models' reasoning (provider-internal, left out by default). A
    min_score outside [0, 1] is a usage error (no checklist score reaches it); when no record is left,
    NothingToExport is raised and no file is written (an existing one is left as it was)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if min_score is not None and not 0.0 <= min_score <= 1.0:
        raise UsageError(f"--min-score {min_score:g}: a checklist score lies between 0 and 1")
    run = RunDir(Path(run_dir))
    everything = with_plans(run.read_results(), run.read_manifest().config.agent)
    results = select(everything, min_score, checklist=checklist, state_check=state_check, observation=observation)
    records: list[dict[str, Any]] = []
    for r in results:
        record = (to_openai if fmt == "openai" else to_sharegpt)(r, keep_reasoning=keep_reasoning)
        if record is not None:
            records.append(record)
    target = Path(out) if out else Path(run_dir) / f"export-{fmt}.jsonl"
    if not records:
        raise NothingToExport(_nothing_left(len(everything), len(results), fmt, target))
    write_jsonl_atomic(target, records)
    return Exported(target, len(records), len(everything))


def _nothing_left(episodes: int, selected: int, fmt: str, target: Path) -> str:
    kept = f" ({target} from an earlier export is left as it was)" if target.exists() else ""
    if not episodes:
        why = "the run has no finished episode"
    elif not selected:
        why = f"none of its {episodes} episode(s) passes the filters (infra errors never do)"
    else:
        why = f"none of the {selected} selected episode(s) ends with an assistant answer, which {fmt} needs"
    return f"nothing to export: {why}; no file written{kept}"


__all__ = ["FORMATS", "ChecklistFilter", "ExportFormat", "Exported", "NothingToExport", "ObservationFilter",
           "StateCheckFilter", "export_run", "select", "to_openai", "to_sharegpt"]
