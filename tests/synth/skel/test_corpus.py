"""Reading task corpora and the cheap filters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.errors import InputFileError
from envscaler_mcp.synth.skel.corpus import api_bank_query, collect_tasks, record_query, reject_reason

_ROOT = Path(__file__).resolve().parents[3]
# The shared data folder sits beside the checkout (../shared/data), or beside the worktrees' parent.
SHARED_CORPUS = next((p for p in (_ROOT.parent / "shared" / "data" / "api-bank-lv3-train.json",
                                  _ROOT.parent.parent / "shared" / "data" / "api-bank-lv3-train.json")
                      if p.exists()), _ROOT.parent / "shared" / "data" / "api-bank-lv3-train.json")


def test_api_bank_query_cuts_at_the_first_marker():
    text = 'x\nUser: Find a cardiologist in Los Angeles.TIME: 2034-04-15\nGenerate API Request: '
    assert api_bank_query(text) == "Find a cardiologist in Los Angeles."
    assert api_bank_query("User: Book it\nAI: done") == "Book it"
    assert api_bank_query("no user here") is None


def test_record_shapes():
    assert record_query({"task": " Do it now "}) == ("Do it now", "plain")
    assert record_query({"conversations": [{"from": "user", "value": "Hi there you"}]}) == ("Hi there you", "toolace")
    assert record_query({"conversations": [{"from": "system", "value": "Role"}]}) is None
    assert record_query({"instruction": "", "input": "User: Add a task today"}) == ("Add a task today", "api-bank")
    assert record_query(42) is None


@pytest.mark.parametrize(("query", "reason"), [
    ("Show me a photo of a cat", "multimodal"),
    ("Play the video clips please", "multimodal"),
    ("Email alice@example.org the report", "url-or-email"),
    ("Open https://x.io for me", "url-or-email"),
    ("Réservez une table pour deux", "non-english"),
    ("Hi", "too-short"),
    ("Role definition: you are a bot", "blocked-phrase"),
    ("Cancel my dentist appointment on Friday", None),
    ("Book the \u201cblue\u201d room for Monday", None),
])
def test_reject_reason(query, reason):
    assert reject_reason(query) == reason


def test_collect_fixture_corpus(corpus):
    tasks, stats = collect_tasks(corpus)
    assert [t.source for t in tasks][:3] == ["api-bank", "toolace", "plain"]
    assert stats["duplicate"] == 1 and stats["multimodal"] == 1 and stats["url-or-email"] == 1
    assert stats["non-english"] == 1 and stats["kept"] == len(tasks) == 7
    limited, stats = collect_tasks(corpus, limit=2)
    assert len(limited) == 2 and stats["over-limit"] == 5


def test_json_list_and_errors(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"task": "Add milk to my shopping list"}, {"task": "Add milk to my shopping list"}]))
    tasks, stats = collect_tasks(path)
    assert len(tasks) == 1 and stats["duplicate"] == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": "ok fine sure"}\n{oops\n')
    with pytest.raises(InputFileError, match="line 2"):
        collect_tasks(bad)
    with pytest.raises(InputFileError, match="not found"):
        collect_tasks(tmp_path / "missing.jsonl")


@pytest.mark.skipif(not SHARED_CORPUS.exists(), reason="shared API-Bank corpus not present")
def test_real_api_bank_corpus():
    tasks, stats = collect_tasks(SHARED_CORPUS)
    assert stats["records"] == 1245
    assert stats["kept"] == len(tasks) > 200
    assert all(t.source == "api-bank" and "TIME:" not in t.task and "API-Request" not in t.task for t in tasks)
    assert len({t.task_id for t in tasks}) == len(tasks)
