"""The runtime of a BFCL environment: BFCL's own classes, loaded from their sources, behind one environment class
whose state is JSON.

This module's text is copied into every generated BFCL environment (interop/bfcl/envmodule.py), so it imports
nothing from envscaler_mcp. Each BFCL module is executed from its source into a module object of its own (its
`from bfcl_eval...long_context import ...` line is answered from the modules loaded before it, nothing is
added to `sys.modules`). A tool call rebuilds the class instance from the JSON state, runs BFCL's method, and
writes the instance back as JSON, in place, so that the server's journal can roll a failed call back.

The JSON form of an instance keeps every attribute: public ones as BFCL compares them, private ones (a
leading `_`: the current directory, the seeded random generators) for the next call. Values JSON cannot
carry are tagged: {"$tuple": [...]}, {"$set": [...]}, {"$items": [[key, value], ...]} (a dict with keys that
are not all strings), {"$random": state}, {"$directory": name, "contents": {...}}, {"$file": name, "content":
...}, and {"$path": [...]} for a directory held outside the tree (GorillaFileSystem's current directory).
"""

from __future__ import annotations

import builtins
import copy
import functools
import json
import random
import sys
import types
from typing import Any

BFCL_PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
TAGS = ("$tuple", "$set", "$items", "$random", "$directory", "$file", "$path")


def load_modules(sources: dict[str, str]) -> dict[str, types.ModuleType]:
    """BFCL's modules (file stem -> source, dependencies first), each executed into a module of its own."""
    modules: dict[str, types.ModuleType] = {}
    real_import = builtins.__import__

    def bfcl_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if name.startswith(BFCL_PACKAGE + ".") and fromlist:
            return modules[name[len(BFCL_PACKAGE) + 1:]]
        return real_import(name, globals, locals, fromlist, level)

    scope = dict(vars(builtins))
    scope["__import__"] = bfcl_import
    for stem, source in sources.items():
        module = types.ModuleType(f"{BFCL_PACKAGE}.{stem}")
        module.__dict__["__builtins__"] = scope
        exec(_compiled(stem, source), module.__dict__)
        modules[stem] = module
    return modules


@functools.lru_cache(maxsize=32)
def _compiled(stem: str, source: str) -> types.CodeType:
    """A module's code, compiled once per process (the import loads the modules afresh for every task)."""
    return compile(source, f"bfcl_eval/eval_checker/multi_turn_eval/func_source_code/{stem}.py", "exec")


def _order(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def encode(value: Any) -> Any:
    """A JSON value for a BFCL value (tagged where JSON has no such type); TypeError for anything else."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"$set": sorted((encode(v) for v in value), key=_order)}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not any(k in TAGS for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"$items": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, random.Random):
        version, internal, gauss = value.getstate()
        return {"$random": [version, list(internal), gauss]}
    kind = type(value).__name__
    if kind == "Directory":
        return {"$directory": value.name, "contents": {k: encode(v) for k, v in value.contents.items()}}
    if kind == "File":
        return {"$file": value.name, "content": value.content}
    raise TypeError(f"a BFCL state holds a {kind}, which this environment cannot keep as JSON")


def decode(value: Any, module: types.ModuleType, parent: Any = None) -> Any:
    """The BFCL value of a JSON value made by `encode` (directories and files as `module`'s classes)."""
    if isinstance(value, list):
        return [decode(v, module) for v in value]
    if not isinstance(value, dict):
        return value
    if "$tuple" in value:
        return tuple(decode(v, module) for v in value["$tuple"])
    if "$set" in value:
        return {decode(v, module) for v in value["$set"]}
    if "$items" in value:
        return {decode(k, module): decode(v, module) for k, v in value["$items"]}
    if "$random" in value:
        version, internal, gauss = value["$random"]
        generator = random.Random()
        generator.setstate((version, tuple(internal), gauss))
        return generator
    if "$directory" in value:
        directory = module.Directory(value["$directory"], parent)
        for name, item in value["contents"].items():
            directory.contents[name] = decode(item, module, directory)
        return directory
    if "$file" in value:
        return module.File(value["$file"], value["content"])
    return {k: decode(v, module) for k, v in value.items()}


def encode_instance(instance: Any) -> dict[str, Any]:
    """Every attribute of a BFCL instance as JSON; a directory outside `root` becomes its path from `root`."""
    state: dict[str, Any] = {}
    root = vars(instance).get("root")
    for name, value in vars(instance).items():
        if name != "root" and root is not None and type(value).__name__ == "Directory":
            path: list[str] = []
            while value is not None and value is not root:
                path.append(value.name)
                value = value.parent
            state[name] = {"$path": path[::-1]}
        else:
            state[name] = encode(value)
    return state


def decode_instance(cls: type, state: dict[str, Any], module: types.ModuleType) -> Any:
    """A BFCL instance with the attributes of `state` (as made by encode_instance)."""
    instance = cls()
    paths = {}
    for name, value in state.items():
        if isinstance(value, dict) and "$path" in value:
            paths[name] = value["$path"]
        else:
            setattr(instance, name, decode(value, module))
    for name, path in paths.items():
        directory = instance.root
        for part in path:
            directory = directory.contents[part]
        setattr(instance, name, directory)
    return instance


def bfcl_output(value: Any) -> str:
    """What BFCL's checker records for a call's return value (multi_turn_utils.execute_multi_turn_func_call)."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except Exception:
            return str(value)
    return str(value)


def tool_result(value: Any) -> dict[str, Any]:
    """The tool result of a BFCL return value: a dict JSON can carry as it is, else {"result": BFCL's text}."""
    if type(value) is dict:
        try:
            json.dumps(value, ensure_ascii=False)
            return value
        except Exception:
            pass
    return {"result": bfcl_output(value)}


class Classes:
    """The BFCL classes of an environment: class name -> (class, its module)."""

    def __init__(self, sources: dict[str, str], owners: dict[str, str]) -> None:
        modules = load_modules(sources)
        self.classes = {name: (getattr(modules[stem], name), modules[stem]) for name, stem in owners.items()}

    def initial(self, class_name: str, config: dict[str, Any], long_context: bool) -> dict[str, Any]:
        """The JSON state of a class after BFCL's `_load_scenario(config, long_context)`."""
        cls, _ = self.classes[class_name]
        instance = cls()
        if hasattr(instance, "_load_scenario"):
            instance._load_scenario(json.loads(json.dumps(config)), long_context=long_context)
        return encode_instance(instance)

    def call(self, holder: dict[str, Any], class_name: str, method: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run one BFCL method on the instance that `holder` (a class's JSON state, changed in place) describes."""
        cls, module = self.classes[class_name]
        instance = decode_instance(cls, json.loads(json.dumps(holder)), module)
        value = getattr(instance, method)(**arguments)
        after = encode_instance(instance)
        if after != holder:
            holder.clear()
            holder.update(after)
        return tool_result(value)


def _public(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if not k.startswith("_")}


def execute_task(classes: Classes, task: dict[str, Any], turns: list[list[dict[str, Any]]], long_context: bool
                 ) -> dict[str, Any]:
    """A task's ground truth (`turns`: per turn, {"tool", "arguments"} calls) executed as BFCL's checker executes
    it (multi_turn_utils.execute_multi_turn_func_call): one instance per involved class, loaded by
    `_load_scenario(initial_config, long_context)` and kept across turns, each return value as the text BFCL
    records, an exception as `Error during execution: ...`. Returns {"initial_state", "outputs" (per turn),
    "states" (after each turn), "changed" (tools whose call changed some public attribute)}."""
    config = task.get("initial_config") or {}
    instances: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for name in task["involved_classes"]:
        cls, _ = classes.classes[name]
        instance = cls()
        if hasattr(instance, "_load_scenario"):
            instance._load_scenario(copy.deepcopy(config.get(name, {})), long_context=long_context)
        instances[name] = instance
        owner.update((m, name) for m in dir(instance) if not m.startswith("_") and callable(getattr(instance, m)))
    initial = {name: encode_instance(instance) for name, instance in instances.items()}
    outputs: list[list[str]] = []
    states: list[dict[str, Any]] = []
    changed: set[str] = set()
    for calls in turns:
        row = []
        for call in calls:
            instance = instances[owner[call["tool"]]]
            before = _public(encode_instance(instance))
            try:  # fresh arguments, as BFCL's eval of the call text makes them: a method may keep and change them
                row.append(bfcl_output(getattr(instance, call["tool"])(**copy.deepcopy(call["arguments"]))))
            except Exception as exc:
                row.append(f"Error during execution: {exc}")
            if _public(encode_instance(instance)) != before:
                changed.add(call["tool"])
        outputs.append(row)
        states.append({name: encode_instance(instance) for name, instance in instances.items()})
    return {"initial_state": initial, "outputs": outputs, "states": states, "changed": sorted(changed)}


def serve_tasks(sources: dict[str, str], owners: dict[str, str]) -> None:
    """Answer tasks from stdin, one JSON line each ({"task", "turns", "long_context"}), with one JSON line each on
    stdout: execute_task's result or {"error": ...}. Each task runs on freshly loaded modules: BFCL's classes keep
    mutable defaults (a `mentions=[]` that a later call extends)."""
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = execute_task(Classes(sources, owners), request["task"], request["turns"],
                                  bool(request["long_context"]))
        except Exception as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
