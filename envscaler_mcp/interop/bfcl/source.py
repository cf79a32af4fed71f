"""Where BFCL's multi-turn data lives: the bfcl-eval wheel, or a folder holding its `bfcl_eval/` package.

Read: the tasks and ground truth of each category, the function docs and the sources of the classes. Nothing is
downloaded here: `pip download --no-deps bfcl-eval==2026.3.23` gives the wheel (Apache-2.0, from the Berkeley
Function Calling Leaderboard, https://github.com/ShishirPatil/gorilla).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from envscaler_mcp.errors import InputFileError, UsageError

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
# BFCL's class -> the stem of its source module and of its function-doc file (constants/executable_backend_config.py)
CLASS_STEMS = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
# Packages a class's module imports beyond the standard library: the environment's requirements (its server
# depends on them; the import and the harness's servers need them installed here, docs/bfcl.md)
REQUIREMENTS = {"MathAPI": ["mpmath>=1.3"]}
SOURCE_DIR = "bfcl_eval/eval_checker/multi_turn_eval/func_source_code"
# BFCL's user message for a turn that only adds functions back (constants/default_prompts.py)
ADDED_FUNCTIONS_PROMPT = "I have updated some more functions you can choose from. What about now?"
ATTRIBUTION = (
    "From bfcl-eval {version} (Berkeley Function Calling Leaderboard, https://github.com/ShishirPatil/gorilla, "
    "by Huanzhi Mao, Shishir Patil and the Sky Computing Lab), licensed under the Apache License 2.0 "
    "(https://www.apache.org/licenses/LICENSE-2.0)."
)


class BfclSource:
    """The files of one bfcl-eval release, from its wheel or from a folder with `bfcl_eval/` in it."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._zip: zipfile.ZipFile | None = None
        self._root: Path | None = None
        if self.path.is_file():
            try:
                self._zip = zipfile.ZipFile(self.path)
            except zipfile.BadZipFile:
                raise InputFileError(self.path, "not a wheel (zip) file") from None
        elif (self.path / "bfcl_eval").is_dir():
            self._root = self.path
        elif self.path.name == "bfcl_eval" and self.path.is_dir():
            self._root = self.path.parent
        else:
            raise UsageError(f"{self.path}: not a bfcl-eval wheel or a folder holding bfcl_eval/ "
                             "(get one with `pip download --no-deps bfcl-eval==2026.3.23`)")
        if not self.exists(f"{SOURCE_DIR}/gorilla_file_system.py"):
            raise UsageError(f"{self.path}: no BFCL multi-turn classes in it ({SOURCE_DIR}/ is missing)")

    def exists(self, name: str) -> bool:
        """Whether the release has file `name` (a path under the folder holding bfcl_eval/)."""
        if self._zip is not None:
            return name in self._zip.namelist()
        assert self._root is not None
        return (self._root / name).is_file()

    def read_text(self, name: str) -> str:
        """The text of file `name`; InputFileError when it is missing."""
        try:
            if self._zip is not None:
                return self._zip.read(name).decode("utf-8")
            assert self._root is not None
            return (self._root / name).read_text(encoding="utf-8")
        except (KeyError, FileNotFoundError):
            raise InputFileError(self.path, f"{name} is missing") from None

    def version(self) -> str:
        """The release's version, from its dist-info (`unknown` for a folder without one)."""
        if self._zip is not None:
            names = self._zip.namelist()
        else:
            assert self._root is not None
            names = [str(p.relative_to(self._root)) for p in self._root.glob("*.dist-info/METADATA")]
        for name in names:
            if name.endswith(".dist-info/METADATA"):
                for line in self.read_text(name).splitlines():
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
        return "unknown"

    def _json_lines(self, name: str) -> list[dict[str, Any]]:
        rows = []
        for n, line in enumerate(self.read_text(name).splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputFileError(self.path, f"{name} line {n}: not JSON: {exc.msg}") from None
            if not isinstance(row, dict):
                raise InputFileError(self.path, f"{name} line {n}: not a JSON object")
            rows.append(row)
        return rows

    def tasks(self, category: str) -> list[dict[str, Any]]:
        """The category's task entries, in file order."""
        return self._json_lines(f"bfcl_eval/data/BFCL_v4_multi_turn_{category}.json")

    def ground_truth(self, category: str) -> dict[str, list[list[str]]]:
        """Task id -> its ground truth: per turn, the list of call strings."""
        rows = self._json_lines(f"bfcl_eval/data/possible_answer/BFCL_v4_multi_turn_{category}.json")
        return {str(row["id"]): row["ground_truth"] for row in rows}

    def func_docs(self, class_name: str) -> list[dict[str, Any]]:
        """The function docs BFCL shows a model for one class, in file order."""
        return self._json_lines(f"bfcl_eval/data/multi_turn_func_doc/{CLASS_STEMS[class_name]}.json")

    def module_source(self, stem: str) -> str:
        """The source of one module of the classes."""
        return self.read_text(f"{SOURCE_DIR}/{stem}.py")


def parse_categories(text: str) -> list[str]:
    """`base,miss_func` or `all` -> the categories, in BFCL's order; UsageError for an unknown one."""
    names = [c.strip() for c in text.split(",") if c.strip()]
    if names == ["all"]:
        return list(CATEGORIES)
    unknown = [c for c in names if c not in CATEGORIES]
    if unknown or not names:
        raise UsageError(f"unknown category {', '.join(unknown) or repr(text)}; choose from "
                         f"{', '.join(CATEGORIES)} or all")
    return [c for c in CATEGORIES if c in names]
