"""The Go subscriber's core semantics against Google's official emulator
(go/internal/subscriber/emulator_test.go, TestGoogleEmulator): it needs a
running emulator, which this suite has, so it runs here rather than in
`go test ./...`, where it skips."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from emulators import REPO


def test_go_subscriber_semantics_hold_against_googles_emulator(emulator):
    go = shutil.which("go")
    if go is None:
        pytest.fail("the Go toolchain is needed to run go/internal/subscriber's TestGoogleEmulator")
    r = subprocess.run([go, "test", "-count=1", "-v", "-run", "^TestGoogleEmulator$", "./go/internal/subscriber"],
                       cwd=REPO, env={**os.environ, "PUBSUB_GO_TEST_EMULATOR": emulator.host_port},
                       capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    # It skips without the variable: make sure it ran.
    assert "--- PASS: TestGoogleEmulator" in out, out[-4000:]
