"""Where one environment's work lives under OUT/_work/<env>/, and merging kept scenarios into OUT/<env>.jsonl.

    OUT/_work/<env>/states/<item>.json   StateRecord: initial states that passed (stage 1)
    OUT/_work/<env>/items/<item>.json    ItemRecord: scenarios that passed the gate (stages 2-5)
    OUT/_work/<env>/dropped.jsonl        DroppedRecord: items given up, with the step and the reason
    OUT/<env>.jsonl                      the scenario set (existing scenarios kept; new ones appended)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from envscaler_mcp.catalog.store import load_scenarios, save_scenarios
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.synth._common_store import ItemDir, JsonlLedger
from envscaler_mcp.synth.scen.records import DroppedRecord, ItemRecord
from envscaler_mcp.synth.skel.dedupe import sparse_cosine, tfidf_vectors

DEFAULT_SIMILARITY = 0.5  # paraphrases of one task score ~0.6; the closest distinct bundled tasks 0.41


class EnvWork:
    """The work folders of one environment."""

    def __init__(self, out: Path, env_id: str) -> None:
        self.env_id = env_id
        self.out = Path(out)
        self.folder = self.out / "_work" / env_id
        self.states = ItemDir(self.folder / "states")
        self.items = ItemDir(self.folder / "items")
        self.dropped = JsonlLedger(self.folder / "dropped.jsonl", "item_id")

    @property
    def scenario_file(self) -> Path:
        """OUT/<env>.jsonl."""
        return self.out / f"{self.env_id}.jsonl"

    def has_work(self) -> bool:
        """True when an earlier run left results here."""
        return self.folder.exists() and any(self.folder.iterdir())

    def finished(self, item_id: str) -> bool:
        """The item was kept or dropped in an earlier run."""
        return self.items.done(item_id) or item_id in self.dropped

    def kept(self) -> list[ItemRecord]:
        """Finished scenarios, in item order."""
        return [ItemRecord.model_validate(r) for r in self.items.all()]


@dataclass
class MergeResult:
    """What merging one environment's scenarios did."""

    added: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    total: int = 0


def task_similarity(a: list[str], b: list[str]) -> list[list[float]]:
    """Lexical cosine similarity (TF-IDF, the SkelBuilder de-duplication helper) of tasks `a` against `b`."""
    vectors = tfidf_vectors([*a, *b])
    left, right = vectors[: len(a)], vectors[len(a):]
    return [[sparse_cosine(x, y) for y in right] for x in left]


def merge(work: EnvWork, threshold: float = DEFAULT_SIMILARITY) -> MergeResult:
    """Append the kept scenarios not yet in OUT/<env>.jsonl, dropping near-duplicate tasks (atomic rewrite).

    Scenarios already in the file stay first and win over new ones; among new ones the earlier item wins. A
    duplicate is recorded in dropped.jsonl with step 'dedupe'. Running it twice changes nothing.
    """
    result = MergeResult()
    path = work.scenario_file
    existing: list[Scenario] = load_scenarios(path) if path.exists() else []
    present = {s.id for s in existing}
    pool: list[Scenario] = list(existing)
    added: list[Scenario] = []
    for record in work.kept():
        scenario = record.scenario
        previous = work.dropped.get(record.item_id)
        if previous is not None and previous.get("step") == "dedupe":
            result.duplicates.append(record.item_id)
            continue
        if scenario.id in result.added:  # another item of this run made the very same scenario
            work.dropped.add(DroppedRecord(
                item_id=record.item_id, step="dedupe", scenario_id=scenario.id, usage=record.usage,
                reason=f"identical to {scenario.id} ({scenario.title!r}), made from another item").model_dump(
                    mode="json"))
            result.duplicates.append(record.item_id)
            continue
        if scenario.id in present:
            result.already.append(scenario.id)
            continue
        same_env = [s for s in pool if s.env_id == scenario.env_id]
        if same_env:
            sims = task_similarity([scenario.task], [s.task for s in same_env])[0]
            best = max(range(len(sims)), key=sims.__getitem__)
            if sims[best] >= threshold:
                other = same_env[best]
                work.dropped.add(DroppedRecord(
                    item_id=record.item_id, step="dedupe", scenario_id=scenario.id, usage=record.usage,
                    reason=f"task is a near-duplicate of {other.id} ({other.title!r}): similarity "
                           f"{sims[best]:.2f} >= {threshold}").model_dump(mode="json"))
                result.duplicates.append(record.item_id)
                continue
        pool.append(scenario)
        added.append(scenario)
        present.add(scenario.id)
        result.added.append(scenario.id)
    if added:
        save_scenarios(existing + added, path)
    result.total = len(existing) + len(added)
    return result
