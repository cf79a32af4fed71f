"""What a launch works out per environment, once (render/engine.py templates_hash and Fingerprint,
launch/target.py resolve_launch and ServerDir.code_hash): the same values, files read again only when they
change, and a code hash that covers every file a replay depends on."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.catalog import hashed
from envscaler_mcp.catalog.paths import generated_servers_dir
from envscaler_mcp.errors import InputFileError, UsageError
from envscaler_mcp.launch.target import resolve_launch, resolve_target, server_dir_info
from envscaler_mcp.render import engine
from envscaler_mcp.render.engine import fingerprint, render_server, verified_files
from envscaler_mcp.skeleton.models import EnvSkeleton
from tests.render.fixture_env import scenarios, skeleton


def test_the_templates_hash_is_kept_while_no_file_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "server"
    shutil.copytree(engine.server_templates(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    first = engine.templates_hash()
    monkeypatch.setattr(engine, "server_templates", lambda: copy)
    assert engine.templates_hash() == first  # the same files, copied: the same value
    reads: list[Path] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or real(self))
    assert engine.templates_hash() == first and reads == []  # kept: nothing read
    readme = copy / "README.md.j2"
    original = readme.read_text(encoding="utf-8")
    readme.write_text(original + "\n", encoding="utf-8")
    edited = engine.templates_hash()
    assert edited != first and readme in reads
    readme.write_text(original, encoding="utf-8")  # back as it was (another modification time)
    assert engine.templates_hash() == first
    (copy / "runtime" / "extra.py").write_text("x = 1\n", encoding="utf-8")  # a file added
    assert engine.templates_hash() not in (first, edited)


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"loads": 0, "hashes": 0}
    validate, content_hash = EnvSkeleton.model_validate, EnvSkeleton.content_hash

    def counted_validate(data: Any, **kw: Any) -> EnvSkeleton:
        counts["loads"] += 1
        return validate(data, **kw)

    def counted_hash(self: EnvSkeleton) -> str:
        counts["hashes"] += 1
        return content_hash(self)

    monkeypatch.setattr(EnvSkeleton, "model_validate", counted_validate)
    monkeypatch.setattr(EnvSkeleton, "content_hash", counted_hash)
    monkeypatch.setattr(hashed, "_hashes", {})  # none kept from other tests
    monkeypatch.setattr(hashed, "_facts", {})
    return counts


def test_a_catalog_environment_is_read_and_hashed_once_per_launch(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVSCALER_MCP_CACHE", str(tmp_path))
    counts = _counting(monkeypatch)
    server, trusted = resolve_launch("ecommerce_orders")  # the committed server, current
    assert counts == {"loads": 1, "hashes": 1}
    assert server.path == (generated_servers_dir() / "ecommerce_orders").resolve() and trusted
    counts.update(loads=0, hashes=0)
    cached, _ = resolve_launch("ecommerce_orders", [])  # without scenarios: rendered into the cache
    assert counts == {"loads": 1, "hashes": 0}  # the skeleton's hash was kept; the manifest takes the fingerprint's
    assert cached.path.parent == tmp_path / "servers"
    counts.update(loads=0, hashes=0)
    again, _ = resolve_launch("ecommerce_orders", [])  # found in the cache, checked, not rendered again
    assert again == cached and counts == {"loads": 0, "hashes": 0}  # nor the skeleton read: its facts were kept
    # the digests checked on the way are the files' own
    assert again.code_hash() == server_dir_info(again.path).code_hash()
    assert resolve_target("ecommerce_orders", []) == cached


def test_a_skeleton_s_facts_are_kept_for_the_next_process_and_never_another_file_s(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Planning and launching read what they need of a skeleton from its kept facts (the user cache, under the
    file's sha256 and the code tag): a later process does not read the skeleton itself. An edited file gets its
    own facts; a kept file that is not facts, or one kept for other code, is not used. (A synthesized skeleton,
    as a large catalog's are: kept facts calling code hand-authored are confirmed from the skeleton, tested in
    tests/launch/test_code_cache_launch.py.)"""
    counts = _counting(monkeypatch)
    folder = tmp_path / "shop"
    folder.mkdir()
    first = skeleton()
    first = first.model_copy(update={"provenance": first.provenance.model_copy(update={"source": "synthesized"})})
    (folder / "skeleton.json").write_text(json.dumps(first.model_dump(mode="json")), encoding="utf-8")
    facts = hashed.skeleton_facts(str(folder))
    assert (facts.id, facts.name, facts.introduction, facts.rules, facts.free_fields, facts.success_convention,
            facts.source, facts.content_hash) == (
        first.id, first.name, first.introduction, first.rules, first.free_fields, first.success_convention,
        first.provenance.source, first.content_hash())
    assert counts["loads"] == 1
    monkeypatch.setattr(hashed, "_facts", {})  # a new process: only the user cache remains
    assert hashed.skeleton_facts(str(folder)) == facts and counts["loads"] == 1  # read from the cache
    changed = first.model_copy(update={"name": first.name + " (renamed)", "rules": [*first.rules, "One more."]})
    (folder / "skeleton.json").write_text(json.dumps(changed.model_dump(mode="json")), encoding="utf-8")
    now = hashed.skeleton_facts(str(folder))
    assert (now.name, now.rules, now.content_hash) == (changed.name, changed.rules, changed.content_hash())
    assert counts["loads"] == 2
    kept = hashed._stored(hashlib.sha256((folder / "skeleton.json").read_bytes()).digest(), "skeleton-facts")
    assert kept is not None
    kept.with_suffix(".json").write_text('{"id": "shop"}', encoding="utf-8")  # not facts: read the skeleton again
    monkeypatch.setattr(hashed, "_facts", {})
    assert hashed.skeleton_facts(str(folder)) == now and counts["loads"] == 3
    monkeypatch.setattr(hashed, "code_tag", lambda: "other-code")  # kept by another version of the models
    monkeypatch.setattr(hashed, "_facts", {})
    assert hashed.skeleton_facts(str(folder)) == now and counts["loads"] == 4
    (folder / "skeleton.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InputFileError, match="not valid JSON"):
        hashed.skeleton_facts(str(folder))
    with pytest.raises(UsageError):
        hashed.skeleton_facts(str(tmp_path / "missing"))


def test_a_kept_skeleton_hash_is_the_file_s_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hashed, "_hashes", {})
    folder = tmp_path / "shop"
    folder.mkdir()
    first = skeleton()
    (folder / "skeleton.json").write_text(json.dumps(first.model_dump(mode="json")), encoding="utf-8")
    got, digest = hashed.hashed_skeleton(str(folder))
    assert got == first and digest == first.content_hash()
    changed = first.model_copy(update={"summary": first.summary + " (changed)"})
    (folder / "skeleton.json").write_text(json.dumps(changed.model_dump(mode="json")), encoding="utf-8")
    got, digest = hashed.hashed_skeleton(str(folder))
    assert got == changed and digest == changed.content_hash() != first.content_hash()
    (folder / "skeleton.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InputFileError, match="not valid JSON"):
        hashed.hashed_skeleton(str(folder))


def test_a_skeleton_hash_worked_out_once_is_read_by_the_next_process(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The content hash is written to the user cache under the file's sha256 and the code tag: a later process
    (here: the in-process hashes forgotten) reads it instead of hashing again; a kept file that is not a hash,
    or one kept for other code, is not used."""
    counts = _counting(monkeypatch)
    folder = tmp_path / "shop"
    folder.mkdir()
    (folder / "skeleton.json").write_text(json.dumps(skeleton().model_dump(mode="json")), encoding="utf-8")
    truth = skeleton().content_hash()
    counts.update(hashes=0)
    assert hashed.hashed_skeleton(str(folder))[1] == truth and counts["hashes"] == 1
    monkeypatch.setattr(hashed, "_hashes", {})
    assert hashed.hashed_skeleton(str(folder))[1] == truth and counts["hashes"] == 1  # read, not worked out
    kept = hashed._stored(hashlib.sha256((folder / "skeleton.json").read_bytes()).digest())
    assert kept is not None and kept.read_text(encoding="ascii") == truth
    kept.write_text("0" * 63 + "g", encoding="ascii")  # not a hash: worked out again, and kept anew
    monkeypatch.setattr(hashed, "_hashes", {})
    assert hashed.hashed_skeleton(str(folder))[1] == truth and counts["hashes"] == 2
    assert kept.read_text(encoding="ascii") == truth
    monkeypatch.setattr(hashed, "code_tag", lambda: "other-code")  # what another version of the models keeps
    monkeypatch.setattr(hashed, "_hashes", {})
    assert hashed.hashed_skeleton(str(folder))[1] == truth and counts["hashes"] == 3
    monkeypatch.setattr(hashed, "code_tag", lambda: None)  # the models' source unreadable: nothing kept or read
    monkeypatch.setattr(hashed, "_hashes", {})
    assert hashed.hashed_skeleton(str(folder))[1] == truth and counts["hashes"] == 4


def _edit_json(path: Path, change: Any) -> None:
    value = json.loads(path.read_text(encoding="utf-8"))
    change(value)
    path.write_text(json.dumps(value), encoding="utf-8")


def test_the_code_hash_covers_every_file_a_replay_reads(tmp_path: Path) -> None:
    out = render_server(skeleton(), scenarios(), tmp_path / "srv")
    checked = server_dir_info(out, verified_files(out, fingerprint(skeleton(), scenarios())))
    base = server_dir_info(out).code_hash()
    assert checked.files is not None and checked.code_hash() == base
    package = out / checked.package
    (package / "data" / "scenarios.json").write_text("[]\n", encoding="utf-8")  # a replay opens its own state
    assert server_dir_info(out).code_hash() == base
    (package / "__pycache__").mkdir(exist_ok=True)
    (package / "__pycache__" / "x.pyc").write_bytes(b"compiled")
    assert server_dir_info(out).code_hash() == base

    def stricter(spec: dict[str, Any]) -> None:  # a tool's input schema: a call it refuses fails the replay
        spec["tools"][0]["input_schema"]["additionalProperties"] = False

    _edit_json(package / "spec.json", stricter)
    after_spec = server_dir_info(out).code_hash()
    assert after_spec != base
    _edit_json(package / "data" / "default_state.json", lambda state: state.update(extra={}))
    assert server_dir_info(out).code_hash() not in (base, after_spec)
    (package / "environment.py").write_text("# edited\n", encoding="utf-8")
    assert server_dir_info(out).code_hash() not in (base, after_spec)


def test_a_template_edited_while_the_process_runs_is_rendered_anew(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The templates' Jinja environment is kept per process (each template compiled once), yet a template edited
    meanwhile gives the edited output, and the same output as a fresh environment's."""
    copy = tmp_path / "server"
    shutil.copytree(engine.server_templates(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(engine, "server_templates", lambda: copy)
    first = engine.build_files(skeleton(), scenarios())
    assert engine._jinja() is engine._jinja()  # kept
    assert engine.build_files(skeleton(), scenarios())["README.md"] == first["README.md"]
    readme = copy / "README.md.j2"
    readme.write_text(readme.read_text(encoding="utf-8") + "\nEdited {{ name }}.\n", encoding="utf-8")
    edited = engine.build_files(skeleton(), scenarios())["README.md"]
    assert isinstance(edited, bytes) and edited.endswith(f"\nEdited {skeleton().name}.\n".encode())
    engine._jinja_for.cache_clear()
    assert engine.build_files(skeleton(), scenarios())["README.md"] == edited
