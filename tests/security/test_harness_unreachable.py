"""The harness cannot be found, signalled or limited by untrusted code, as a normal user, with and without
user namespaces (tests.security.no_userns refuses them the way Ubuntu's AppArmor policy does).

tests/security/harness_probe.py plays the harness as `nobody` (setpriv, when the tests run as root): the
validators and the launched server's environment code share its uid, so only the sandbox stands between
them. They are given its pid and try prlimit (CPU limit 1 s), SIGKILL and /proc. The effects: the probe is
alive to print its report, its own CPU limit unchanged, the zygote's limit unchanged and the honest checks'
verdicts after the attack equal to those before it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.security.test_unprivileged_user import REPO, as_nobody

PROBE = [sys.executable, "-m", "tests.security.harness_probe"]


def run_probe(argv: list[str]) -> dict:
    command = as_nobody(argv)
    if command is None:
        pytest.skip("cannot run a process as an unprivileged user here (needs setpriv and unshare as root)")
    done = subprocess.run(command, cwd=REPO, env={"PATH": os.defpath, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])  # -9: the harness was killed
    probe: dict = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["uid"] != 0
    return probe


def assert_contained(probe: dict) -> None:
    assert probe["own_limit_kept"]
    checks = probe["validators"]
    assert checks["zygote_after"] == checks["zygote_before"], checks
    assert checks["later"] == checks["clean"] and checks["faults"] == [], checks
    reasons = checks["reasons"]
    assert "lowered" not in reasons["limits"], reasons
    assert "killed" not in reasons["find"] and "listed True" not in reasons["find"], reasons
    assert "read b" not in reasons["find"], reasons
    found = probe["server"]["found"]
    for attack in ("prlimit", "nice", "signal", "shm"):
        assert found[attack].startswith("refused"), found
    assert found["proc"] == "[]" or found["proc"].startswith("refused"), found


@pytest.mark.parametrize("user_namespaces", [True, False], ids=["userns", "no-userns"])
def test_untrusted_code_cannot_reach_a_harness_run_by_a_normal_user(user_namespaces: bool) -> None:
    argv = PROBE if user_namespaces else [sys.executable, "-m", "tests.security.no_userns", *PROBE]
    probe = run_probe(argv)
    assert_contained(probe)
    validators, server = probe["validators"]["layers"], probe["server"]["layers"]
    assert validators["seccomp"] and server["seccomp"], (validators, server)
    if user_namespaces:
        assert validators["pid-namespace"] and server["thread-limit"], (validators, server)
    else:  # what still holds without user namespaces: seccomp and Landlock; no RLIMIT_NPROC, but a server folder
        # of unknown origin runs its episodes in processes of their own, which seccomp lets start no thread
        assert not validators["pid-namespace"] and not server["network-namespace"], (validators, server)
        assert server["thread-limit"] and server["episode-process"] and server["landlock-fs"], server
        said = probe["validators"]["refused"]["pid-namespace"]  # the record says what still holds
        assert "unprivileged user namespace" in said and "seccomp still refuses signals" in said, said
