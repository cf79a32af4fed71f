"""Every SkelBuilder answer parser, on good and on malformed answers."""

from __future__ import annotations

import pytest

from envscaler_mcp.synth._common_parse import (
    AnswerFormatError,
    extract_code,
    extract_json,
    parse_choice,
    parse_score,
    split_sections,
)
from envscaler_mcp.synth.skel import parsers as p

from ..fixtures.skel_router import ANSWERS


def test_split_sections_ignores_headers_inside_code_fences():
    text = "# Code\n```python\n# Analysis\nx = 1\n```\n# Analysis\nwhy"
    sections = split_sections(text, ["Code", "Analysis"])
    assert "x = 1" in sections["Code"] and "# Analysis" in sections["Code"]
    assert sections["Analysis"] == "why"


def test_split_sections_accepts_bold_bracket_and_numbered_headers():
    text = "**Verdict:**\nPass\n[Reason]\nfine\n## 3. Analysis ##\nok"
    assert split_sections(text, ["Verdict", "Reason", "Analysis"]) == {"Verdict": "Pass", "Reason": "fine",
                                                                        "Analysis": "ok"}


def test_inline_headers():
    text = "# Environment Summary: Linux file system\n**Answer:** YES\nmore"
    assert split_sections(text, ["Environment Summary", "Answer"]) == {
        "Environment Summary": "Linux file system", "Answer": "YES\nmore"}
    assert p.parse_judge("Thinking...\n# Answer: NO").stateful is False


def test_extract_json_variants():
    assert extract_json("```json\n{\"a\": 1,}\n```") == {"a": 1}  # trailing comma
    assert extract_json("Sure: {'a': True, 'b': None} done") == {"a": True, "b": None}  # python literal
    assert extract_json("text {\"a\": \"}\"} more") == {"a": "}"}  # brace inside a string
    with pytest.raises(AnswerFormatError, match="no JSON object"):
        extract_json("nothing here")
    with pytest.raises(AnswerFormatError, match="not valid"):
        extract_json("```json\n{\"a\": \n```")
    with pytest.raises(AnswerFormatError, match="got a JSON list"):
        extract_json("```json\n[1, 2]\n```")


def test_extract_code_variants():
    assert extract_code("```python\nx = 1\n```") == "x = 1"
    assert extract_code("```\ny = 2\n```") == "y = 2"
    assert extract_code("def f():\n    return 1") .startswith("def f")
    assert extract_code("```python\nz = 3\n") == "z = 3"  # unclosed fence
    with pytest.raises(AnswerFormatError):
        extract_code("I cannot do that.")


def test_scores_and_choices():
    assert parse_score("Usefulness: 8/10", "Usefulness") == 8
    assert parse_score("- **Modelability**: 7 out of 10", "Modelability") == 7
    with pytest.raises(AnswerFormatError, match="1 to 10"):
        parse_score("Usefulness: 11", "Usefulness")
    with pytest.raises(AnswerFormatError, match="no 'Usefulness"):
        parse_score("great", "Usefulness")
    assert parse_choice("NOTE: the answer is NO", ("YES", "NO"), what="answer") == "NO"
    with pytest.raises(AnswerFormatError):
        parse_choice("maybe", ("YES", "NO"), what="answer")


def test_judge():
    assert p.parse_judge((ANSWERS / "library/judge.md").read_text()).stateful is True
    assert p.parse_judge((ANSWERS / "clinic/judge.md").read_text()).stateful is True  # **YES**
    assert p.parse_judge((ANSWERS / "mine/joke.judge.md").read_text()).stateful is False
    with pytest.raises(AnswerFormatError, match="Answer"):
        p.parse_judge("# Analysis\nhmm")
    with pytest.raises(AnswerFormatError, match="empty"):
        p.parse_judge("")


def test_topic():
    topic = p.parse_topic((ANSWERS / "clinic/topic.md").read_text())
    assert (topic.summary, topic.usefulness, topic.modelability) == ("Clinic appointment scheduling system", 9, 8)
    assert topic.introduction.count(".") == 3
    with pytest.raises(AnswerFormatError, match="Metrics"):
        p.parse_topic("# Environment Summary\nX\n# Environment Introduction\nY")
    with pytest.raises(AnswerFormatError, match="Modelability"):
        p.parse_topic("# Environment Summary\nX\n# Environment Introduction\nY\n# Metrics\nUsefulness: 5")


def test_method_and_initial_state():
    assert p.parse_method((ANSWERS / "library/method_get_book.md").read_text()).code.startswith("def get_book")
    with pytest.raises(AnswerFormatError):
        p.parse_method("# Code\nI would write it like this.")
    assert set(p.parse_initial_state((ANSWERS / "library/init_state.md").read_text()).state) == {"books", "members", "loans"}
    with pytest.raises(AnswerFormatError):
        p.parse_initial_state("# Initial State\n```json\n{broken\n```")


def test_tester():
    answer = p.parse_tester('# Thought\nx\n# Tool\n`get_book`\n# Arguments\n{"book_id": "B1"}\n# Case\nPositive')
    assert (answer.tool, answer.arguments, answer.case) == ("get_book", {"book_id": "B1"}, "positive")
    assert p.parse_tester("# Tool\nlist_all()\n# Arguments\n{}\n# Case\nnegative case").arguments == {}
    with pytest.raises(AnswerFormatError, match="Case"):
        p.parse_tester('# Tool\nx\n# Arguments\n{"a": 1}')
    with pytest.raises(AnswerFormatError, match="case type"):
        p.parse_tester('# Tool\nx\n# Arguments\n{"a": 1}\n# Case\nboth')
    with pytest.raises(AnswerFormatError):
        p.parse_tester("# Tool\nx\n# Arguments\n[1, 2]\n# Case\npositive")


def test_checker():
    assert p.parse_checker("# Verdict\nPass").verdict == "pass"
    answer = p.parse_checker("# Analysis\nbad\n# Verdict\n**Fail**\n# Reason\nno state change")
    assert (answer.verdict, answer.reason) == ("fail", "no state change")
    with pytest.raises(AnswerFormatError, match="Reason"):
        p.parse_checker("# Verdict\nWarning")
    with pytest.raises(AnswerFormatError, match="verdict"):
        p.parse_checker("# Verdict\nLooks good to me")
