"""A cached server's files hashed once, then checked by their stamps (render/verified.py): a change made any way
a process can make one is still found, and the folder is rendered anew."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envscaler_mcp.render import verified
from envscaler_mcp.render.cache import cache_root, ensure_rendered, prune_cache, rendered
from envscaler_mcp.render.engine import MANIFEST, fingerprint
from tests.render.fixture_env import scenarios, skeleton


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVSCALER_MCP_CACHE", str(tmp_path))
    return cache_root()


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The folders whose files were read and hashed, in order."""
    seen: list[Path] = []
    real = verified.digests_hold

    def counting(folder: Path, files: dict[str, str]) -> bool:
        seen.append(folder)
        return real(folder, files)

    monkeypatch.setattr(verified, "digests_hold", counting)
    return seen


def _environment_file(folder: Path) -> Path:
    return next(folder.glob("*/environment.py"))


def test_a_server_checked_again_is_not_hashed_again(cache: Path, hashed: list[Path]) -> None:
    folder = ensure_rendered(skeleton(), scenarios())
    assert hashed == []  # just written by this process: its writer checked it
    expected = fingerprint(skeleton(), scenarios())
    first = verified.checked_files(folder, expected)
    assert first is not None and hashed == [folder]
    assert verified.stamps_path(folder).is_file()
    assert verified.checked_files(folder, expected) == first
    assert rendered(skeleton(), scenarios())[1] == first
    assert hashed == [folder]  # the stamps held: no file read again


@pytest.mark.parametrize("change", ["same size, time set back", "replaced by another file", "removed",
                                    "manifest rewritten"])
def test_a_file_changed_after_its_check_is_found(cache: Path, hashed: list[Path], change: str) -> None:
    folder = ensure_rendered(skeleton(), scenarios())
    expected = fingerprint(skeleton(), scenarios())
    assert verified.checked_files(folder, expected) is not None
    target = _environment_file(folder)
    source = target.read_bytes()
    if change == "same size, time set back":
        st = target.stat()
        target.write_bytes(source.replace(b"def ", b"def_", 1)[: len(source)])
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert target.stat().st_size == st.st_size and target.stat().st_mtime_ns == st.st_mtime_ns
    elif change == "replaced by another file":
        spare = target.with_name("spare.py")
        spare.write_bytes(source + b"\nLEAKED = 1\n")
        spare.replace(target)
    elif change == "removed":
        target.unlink()
    else:
        manifest = folder / MANIFEST
        manifest.write_bytes(manifest.read_bytes() + b" ")
    before = len(hashed)
    found = verified.checked_files(folder, expected)
    if change == "manifest rewritten":  # the same listing: hashed again, and still as listed
        assert found is not None and len(hashed) == before + 1
        return
    assert found is None
    again = ensure_rendered(skeleton(), scenarios())  # rendered anew, in the same place
    assert again == folder and _environment_file(folder).read_bytes() == source


def test_unreadable_stamps_mean_hashing(cache: Path, hashed: list[Path]) -> None:
    folder = ensure_rendered(skeleton(), scenarios())
    expected = fingerprint(skeleton(), scenarios())
    assert verified.checked_files(folder, expected) is not None
    verified.stamps_path(folder).write_text("{not json", encoding="utf-8")
    assert verified.checked_files(folder, expected) is not None
    assert hashed == [folder, folder]
    assert verified.checked_files(folder, expected) is not None  # written anew by the second check
    assert hashed == [folder, folder]


def test_pruning_a_folder_drops_its_stamps(cache: Path) -> None:
    folder = ensure_rendered(skeleton(), scenarios())
    assert verified.checked_files(folder, fingerprint(skeleton(), scenarios())) is not None
    stamps = verified.stamps_path(folder)
    assert stamps.is_file()
    pruned = prune_cache(0, in_use_s=0.0)
    assert [c.path for c in pruned.removed] == [folder]
    assert not folder.exists() and not stamps.exists()


def test_with_stamps_that_cannot_be_written_every_check_hashes_and_a_change_is_still_found(
        cache: Path, hashed: list[Path]) -> None:
    """A cache whose stamps folder cannot be made (a file stands in its place): each check hashes the files, as
    before, and an edited file is still found."""
    folder = ensure_rendered(skeleton(), scenarios())
    expected = fingerprint(skeleton(), scenarios())
    blocker = verified.stamps_path(folder).parent
    blocker.write_text("not a folder", encoding="utf-8")
    assert verified.checked_files(folder, expected) is not None
    assert verified.checked_files(folder, expected) is not None
    assert hashed == [folder, folder] and blocker.is_file()
    target = _environment_file(folder)
    target.write_bytes(target.read_bytes() + b"\n# edited\n")
    assert verified.checked_files(folder, expected) is None
