"""The JVM front end with the test build of the library (a Go panic on
request): the panic reaches Spark's driver as a NativeException naming it,
and the same JVM then reads a backlog through the source under continuous
System.gc() (the Go runtime shares the process's signals with the JVM)."""

from __future__ import annotations

import pytest

import jvm_front_end
import native_debug
from jvm_front_end import Job

pytestmark = pytest.mark.timeout(900)


def test_a_go_panic_is_a_java_exception_and_the_jvm_reads_on_under_gc(google, tmp_path, monkeypatch):
    """On the driver, then inside a task: the library's first take in the
    JVM panics (the test build's PUBSUB_GO_DEBUG_PANIC_AT), which must fail
    that task and its query with the panic named, and Spark cancels the
    other task wherever it is (its reader may not even be made yet); the
    same JVM (driver and executor in local mode) then reads the whole
    backlog exactly once on the failed query's checkpoint: nothing the
    failed tasks held stays held."""
    lib = native_debug.build(tmp_path)
    topic, sub = google.topic()
    ids = google.publish(topic, [f"m{i}".encode() for i in range(5000)])
    monkeypatch.setenv("PUBSUB_GO_DEBUG_PANIC_AT", "take:1")
    job = Job("4.3", {"jar": jvm_front_end.jar(), "emulator": google.host_port, "subscription": sub,
                      "out": str(tmp_path / "out"), "checkpoint": str(tmp_path / "ck"),
                      "steps": [{"kind": "panic"}, {"kind": "failing_read", "key": "task_panic"},
                                {"kind": "gc"}, {"kind": "ids"}],
                      "conf": {"spark.driver.extraJavaOptions": f"-Dpubsubgo.library={lib}"}})
    r = job.result()
    assert "NativeException" in r["panic"] and "panic in libpubsubgo" in r["panic"], r["panic"]
    assert "assignment to entry in nil map" in r["panic"], r["panic"]
    task = r["task_panic"]
    assert "Lost task" in task and "NativeException" in task and "panic in libpubsubgo" in task, task
    assert "assignment to entry in nil map" in task, task
    assert sorted(r["ids"]) == sorted(ids)
