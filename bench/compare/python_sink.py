"""One Python LakeLogic run for `bench:compare`.

python_sink.py <contract> <events.ndjson> <engine> <dir>: Python LakeLogic's StreamSink drains the
file (available_now, batch 10,000) with the given engine into the contract's Delta merge target
and quarantine, and prints {seconds, good, bad, stored, quarantined} as one JSON line. The time
covers reading, JSON parsing, validating and writing; the counts are read back from Delta.
"""
import json
import logging
import os
import sys
import time

from deltalake import DeltaTable
from lakelogic import SQLiteCheckpointStore, StreamSink
from loguru import logger

contract, path, engine, out = sys.argv[1:5]
logger.remove()  # its per-batch INFO lines would be timed too
logging.disable(logging.WARNING)


def events():
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


started = time.perf_counter()
sink = StreamSink(
    contract,
    events(),
    engine=engine,
    checkpoint=SQLiteCheckpointStore(os.path.join(out, "checkpoints.sqlite")),
    checkpoint_key="bench",
    batch_size=10_000,
)
summary = sink.run("available_now")
seconds = time.perf_counter() - started


def rows(table):
    return DeltaTable(os.path.join(out, table)).to_pyarrow_table().num_rows


print(json.dumps({
    "seconds": seconds,
    "good": summary.good_count,
    "bad": summary.bad_count,
    "stored": rows("orders"),
    "quarantined": rows(os.path.join("quarantine", "orders")),
}), flush=True)
# Native threads of its engines can abort the interpreter's teardown; the result is printed.
os._exit(0)
