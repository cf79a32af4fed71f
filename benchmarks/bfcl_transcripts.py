"""A model's recorded episodes on the BFCL pack, judged again by BFCL's own multi-turn checker.

`eval --home BFCL_HOME` keeps every episode's messages in RUN_DIR/results.jsonl. Here each episode's calls are
cut into BFCL's shape (per user turn, per model step, the calls as `name(arg=value, ...)` text) and handed to
BFCL's `multi_turn_checker`, which executes them on its own instances and judges every turn; the project's
verdict is the episode's `success` as the run scored it. Used by `bfcl_agreement.py --transcripts RUN_DIR`.

Two things BFCL would see differently are counted, not hidden: a call the harness refused before it reached the
server (arguments that were not a JSON object; `rejected`) is left out of BFCL's input too, and an episode that
ended in an infrastructure error has no verdict of ours and is left out of both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.bfcl_checker import Decoded, call_text, checker_verdict
from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.interop.bfcl.source import BfclSource
from envscaler_mcp.scenario.models import ToolCall

Steps = list[list[list[ToolCall]]]  # per turn, per model step, its calls


@dataclass
class Judged:
    """One episode under both checkers."""

    task: str
    category: str
    status: str
    ours: bool
    bfcl: bool
    bfcl_reason: str
    why: str  # which of our checks failed
    calls: int
    minutes: float
    our_turn: int | None = None  # the first turn (1-based) whose response check or state check failed here
    bfcl_turn: int | None = None  # the first turn BFCL's checker fails


def steps_of(record: dict[str, Any], turns: int) -> Steps:
    """The agent's calls per user turn and per step (an assistant message), rejected calls left out; a turn the
    episode never reached has no step."""
    out: Steps = [[] for _ in range(turns)]
    turn = -1
    for message in record["messages"]:
        if message["role"] == "user":
            turn += 1
        elif message["role"] == "assistant" and 0 <= turn < turns:
            calls = [ToolCall(tool=c["name"], arguments=c.get("arguments") or {})
                     for c in message.get("tool_calls") or [] if not c.get("rejected")]
            if calls:
                out[turn].append(calls)
    return out


def bfcl_decoded(steps: Steps) -> Decoded:
    """BFCL's decoded model output: per turn, per step, each call as Python call text."""
    return [[[call_text(c) for c in calls] for calls in turn] for turn in steps]


def our_reasons(record: dict[str, Any]) -> str:
    """What made the run's verdict fail: the failed checklist items, the state and observation checks."""
    why = [c["id"] for c in record.get("checks") or [] if c.get("status") != "pass"]
    if record.get("state_check") not in ("pass", None):
        why.append(f"state {record['state_check']}")
    observation = (record.get("observation") or {}).get("status")
    if observation == "failed":
        why.append("observation")
    if record.get("status") != "completed":
        why.append(str(record.get("status")))
    return ", ".join(why)


def our_first_failing_turn(record: dict[str, Any]) -> int | None:
    """The first turn (1-based) whose response-check item (`turnN`) or state check failed in the run."""
    failed = [int(c["id"][4:]) for c in record.get("checks") or []
              if c.get("status") != "pass" and str(c.get("id", "")).startswith("turn") and c["id"][4:].isdigit()]
    failed += [int(t["turn"]) for t in record.get("turns") or [] if t.get("state_check") == "fail"]
    return min(failed, default=None)


def bfcl_first_failing_turn(checker: Any, task: dict[str, Any], truth: list[list[str]], decoded: Decoded
                            ) -> int | None:
    """The first turn (1-based) BFCL's checker fails: the shortest prefix of turns it finds invalid."""
    for k in range(1, len(truth) + 1):
        if not checker_verdict(checker, task, truth[:k], decoded[:k])[0]:
            return k
    return None


def judge_run(run_dir: Path, home: Path, source: BfclSource, checker: Any) -> tuple[list[Judged], int]:
    """Every scorable episode of the run judged by both; also how many episodes were left out (infra errors)."""
    scenarios: dict[str, Any] = {}
    tasks: dict[str, dict[str, dict[str, Any]]] = {}
    truths: dict[str, dict[str, list[list[str]]]] = {}
    judged, skipped = [], 0
    for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if record.get("status") == "infra_error" or not record.get("scorable", True):
            skipped += 1
            continue
        env = record["env_id"]
        if env not in scenarios:
            scenarios[env] = {s.id: s for s in load_scenarios(home / "scenarios" / f"{env}.jsonl")}
        meta = scenarios[env][record["scenario_id"]].extra["bfcl"]
        category = meta["category"]
        if category not in tasks:
            tasks[category] = {str(t["id"]): t for t in source.tasks(category)}
            truths[category] = source.ground_truth(category)
        task, truth = tasks[category][meta["id"]], truths[category][meta["id"]]
        steps = steps_of(record, len(truth))
        decoded = bfcl_decoded(steps)
        theirs, reason = checker_verdict(checker, task, truth, decoded)
        judged.append(Judged(task=meta["id"], category=category, status=record["status"],
                             ours=bool(record.get("success")), bfcl=theirs, bfcl_reason=reason,
                             why=our_reasons(record), calls=sum(len(s) for t in steps for s in t),
                             minutes=float(record.get("latency_s") or 0) / 60,
                             our_turn=our_first_failing_turn(record),
                             bfcl_turn=None if theirs else bfcl_first_failing_turn(checker, task, truth, decoded)))
    return judged, skipped


def transcript_report(judged: list[Judged], skipped: int) -> str:
    """Per episode both verdicts, then both accuracies and their agreement."""
    def task_number(j: Judged) -> tuple[str, int]:
        return j.category, int(j.task.rsplit("_", 1)[1])

    def turn(value: int | None) -> str:
        return "-" if value is None else str(value)

    lines = [f"{'task':<28}{'status':<11}{'calls':>6}{'min':>6}  {'ours':<5}{'bfcl':<5}{'1st failing turn':<18}"
             "why (ours) / BFCL's error type"]
    for j in sorted(judged, key=task_number):
        lines.append(f"{j.task:<28}{j.status:<11}{j.calls:>6}{j.minutes:>6.1f}  {'pass' if j.ours else 'fail':<5}"
                     f"{'pass' if j.bfcl else 'fail':<5}{turn(j.our_turn) + ' / ' + turn(j.bfcl_turn):<18}"
                     f"{j.why or '-'} / {j.bfcl_reason or 'valid'}" + ("   <- disagree" if j.ours != j.bfcl else ""))
    n = len(judged)
    lines.append(f"episodes: {n} judged, {skipped} left out (infrastructure errors)")
    if n:
        lines.append(f"accuracy: ours {sum(j.ours for j in judged)}/{n}, BFCL's checker {sum(j.bfcl for j in judged)}/{n}; "
                     f"agreement {sum(j.ours == j.bfcl for j in judged)}/{n}; "
                     f"same first failing turn {sum(j.our_turn == j.bfcl_turn for j in judged)}/{n}")
    return "\n".join(lines)
