"""The runtime's Episode: loading a state, guarded calls, and EnvScaler-style constructors."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.render._runtime import RUNTIME, load_journal


def _episode_module() -> ModuleType:
    name = "_envscaler_test_runtime"
    if name + ".episode" in sys.modules:
        return sys.modules[name + ".episode"]
    package = importlib.util.module_from_spec(
        importlib.util.spec_from_file_location(name, RUNTIME / "__init__.py",
                                               submodule_search_locations=[str(RUNTIME)]))  # type: ignore[arg-type]
    sys.modules[name] = package
    sys.modules[name + ".journal"] = load_journal()
    spec = importlib.util.spec_from_file_location(name + ".episode", Path(RUNTIME / "episode.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class NeedsConfig:
    def __init__(self, init_config):  # type: ignore[no-untyped-def]
        self.seen = sorted(init_config)
        self.items = dict(init_config.get("items", {}))

    def add(self, key: str) -> dict:
        self.items[key] = {"n": len(self.items)}
        return {"success": True}

    def bad_result(self) -> set:
        self.items["z"] = 1
        return {1, 2}


def test_envscaler_style_constructor_gets_the_state() -> None:
    E = _episode_module()
    J = load_journal()
    ep = E.Episode(J.journaled_class(NeedsConfig), ["items"], {"items": {"a": {"n": 0}}})
    assert ep.env.seen == ["items"]
    out = ep.call("add", {"key": "b"}, 5.0)
    assert not out.is_error and ep.get_state() == {"items": {"a": {"n": 0}, "b": {"n": 1}}}
    assert type(ep.env.items["b"]) is J.JDict


def test_a_result_that_is_not_json_is_an_error_and_rolls_back() -> None:
    E = _episode_module()
    J = load_journal()
    ep = E.Episode(J.journaled_class(NeedsConfig), ["items"], {"items": {}})
    out = ep.call("bad_result", {}, 5.0)
    assert out.is_error and "not JSON serializable" in out.text
    assert ep.get_state() == {"items": {}}
    wrong = ep.call("add", {"nope": 1}, 5.0)
    assert wrong.is_error and "TypeError" in wrong.text


class Shop:
    def __init__(self) -> None:
        self.orders: dict = {}
        self.log: list = []

    def pay(self, order: str) -> dict:
        self.orders[order]["status"] = "paid"
        self.log.append({"paid": order})
        return {"success": True}

    def pay_then_fail(self, order: str) -> dict:
        self.orders[order]["status"] = "paid"
        self.orders["extra"] = {"status": "new"}
        self.log.append({"paid": order})
        self.log = []
        raise ValueError("card declined")


def test_each_episode_has_its_own_journal_and_a_raising_call_leaves_the_state() -> None:
    E = _episode_module()
    J = load_journal()
    cls = J.journaled_class(Shop)
    state = {"orders": {"o1": {"status": "new"}}, "log": []}
    first, second = E.Episode(cls, ["orders", "log"], state), E.Episode(cls, ["orders", "log"], state)
    assert first.journal is not second.journal
    assert first.env.orders._journal is first.journal and second.env.orders._journal is second.journal
    assert J.JOURNAL_SLOT not in vars(first.env)
    assert not second.call("pay", {"order": "o1"}, 5.0).is_error
    failed = first.call("pay_then_fail", {"order": "o1"}, 5.0)
    assert failed.is_error and failed.rolled_back and "card declined" in failed.text
    assert first.get_state() == state  # exactly as before the call
    assert second.get_state() == {"orders": {"o1": {"status": "paid"}}, "log": [{"paid": "o1"}]}
    assert not first.journal.active() and not second.journal.active()
    assert not first.call("pay", {"order": "o1"}, 5.0).is_error  # the journal is free again after a rollback
    assert first.get_state() == second.get_state()
