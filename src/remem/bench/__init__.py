"""The benchmark harnesses behind ``remem bench`` (LoCoMo, LongMemEval, speed) and the measurement
scripts whose numbers are in the source checkout's bench/RESULTS.md (``python -m remem.bench.NAME``)."""
