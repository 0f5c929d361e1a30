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


def test_a_go_panic_is_a_java_exception_and_the_jvm_reads_on_under_gc(google, tmp_path):
    lib = native_debug.build(tmp_path)
    topic, sub = google.topic()
    ids = google.publish(topic, [f"m{i}".encode() for i in range(5000)])
    job = Job("4.3", {"jar": jvm_front_end.jar(), "emulator": google.host_port, "subscription": sub,
                      "out": str(tmp_path / "out"), "checkpoint": str(tmp_path / "ck"),
                      "steps": [{"kind": "panic"}, {"kind": "gc"}, {"kind": "ids"}],
                      "conf": {"spark.driver.extraJavaOptions": f"-Dpubsubgo.library={lib}"}})
    r = job.result()
    assert "NativeException" in r["panic"] and "panic in libpubsubgo" in r["panic"], r["panic"]
    assert "assignment to entry in nil map" in r["panic"], r["panic"]
    assert sorted(r["ids"]) == sorted(ids)
