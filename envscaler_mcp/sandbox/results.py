"""Result of running one validator."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CheckResult(BaseModel):
    """The outcome of one checklist item's validator on one final state or transcript."""

    item_id: str = Field(description="Checklist item id (e.g. 'c1').")
    description: str = Field("", description="The checklist item's text.")
    passed: bool = Field(description="True only when check_func returned the bool True.")
    reason: str | None = Field(
        None,
        description="Why the check did not produce a bool: 'raised ZeroDivisionError: …', 'timed out after 2.0 s', "
        "'returned 'yes' (str), not a bool', 'memory limit exceeded', 'import of 'os' is not allowed', "
        "a syntax error … None when check_func returned True or False.",
    )
    duration_s: float = Field(0.0, description="Seconds spent compiling and running the validator.")
    evidence: list[str] = Field(
        default_factory=list,
        description="What decided a transcript check, as the transcript_checks helpers recorded it: the "
        "sentence that stated a fact, the call that matched, or what was missing.",
    )

    @property
    def errored(self) -> bool:
        """True when the validator did not return a bool (it raised, timed out, was refused …)."""
        return self.reason is not None
