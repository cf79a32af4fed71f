"""Titles derived from a task (imported scenarios come without one): its first sentence, bounded."""

from __future__ import annotations

import pytest

from envscaler_mcp.scenario.titles import TITLE_MAX, shown_title, title_from_task


@pytest.mark.parametrize(
    ("task", "title"),
    [
        ("Ada wants to borrow Dune (B1). Lend it to her, then add a 1.5 fine to Bo.", "Ada wants to borrow Dune (B1)"),
        ("Add a 1.5 fine to Bo (M2).", "Add a 1.5 fine to Bo (M2)"),  # a decimal point ends no sentence
        ("Is order O-1 shipped? Tell me when.", "Is order O-1 shipped?"),
        ("  Check the\n  second line  ", "Check the"),
        ("Wait...", "Wait..."),
        ("", ""),
    ],
)
def test_the_first_sentence(task: str, title: str) -> None:
    assert title_from_task(task) == title


def test_a_long_sentence_is_cut_at_a_word() -> None:
    task = "As the front desk of the clinic you must move every appointment of doctor D-7 to another doctor today"
    title = title_from_task(task)
    assert len(title) <= TITLE_MAX and title.endswith("…") and task.startswith(title[:-1])
    assert task[len(title) - 1] == " "  # cut before a whole word, never inside one
    assert title_from_task("x" * 100).startswith("x" * 70) and len(title_from_task("x" * 100)) == TITLE_MAX


def test_a_title_given_is_kept() -> None:
    assert shown_title("Cancel an order", "Please cancel order O-1. Thanks.") == "Cancel an order"
    assert shown_title("", "Please cancel order O-1. Thanks.") == "Please cancel order O-1"
