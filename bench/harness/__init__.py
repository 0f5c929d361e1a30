"""The side-by-side benchmark harness behind bench/run.py: one module per
section (dataplane, spark_e2e, write, handoff, memory), process plumbing
(procs), statistics (stats), the machine description (machine) and the
report (report, plots)."""
