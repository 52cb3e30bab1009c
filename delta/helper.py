"""LakeLogic's Delta Lake helper: delta-rs (PyPI `deltalake`) driven by the TypeScript side.

    python helper.py     requests on stdin, one JSON reply per request on stdout

The TypeScript side validates the batch and stages its rows as Parquet files (src/lake/delta-writer.ts);
this process commits them to the Delta tables. Each target commit carries a Delta transaction
identifier (`txn`: appId = the stream's checkpoint key, version = the batch id) and the stream's
checkpoint in the commit's metadata, so the table itself records which batch it holds. Commits
are optimistic: a commit that loses a race (CommitFailedError) is tried again from re-reading the
table's transaction version, never blindly, so a rival that committed the batch first fences
this writer instead of duplicating it. Stdout carries only protocol lines.
"""
import json
import os
import sys

_OUT = sys.stdout
sys.stdout = sys.stderr  # anything a library prints goes to stderr, never the protocol

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake  # noqa: E402
from deltalake.exceptions import CommitFailedError, TableNotFoundError  # noqa: E402

META = "lakelogic"
OP = "_lakelogic_op"
# A commit lost to a rival is re-read and tried again; a stream's own batches never race for
# long, so this bound only stops a livelock among many writers of one table.
MAX_ATTEMPTS = 50


def send(msg):
    _OUT.write(json.dumps(msg, allow_nan=False, default=str) + "\n")
    _OUT.flush()


def table(uri, storage):
    try:
        return DeltaTable(uri, storage_options=storage or None)
    except TableNotFoundError:
        return None


def metadata_of(commit):
    text = commit.get(META)
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def find_commit(dt, match):
    """The newest commit whose LakeLogic metadata satisfies `match`, walking the history back."""
    limit = 16
    while True:
        history = dt.history(limit)
        for commit in history:
            meta = metadata_of(commit)
            if meta is not None and match(meta):
                return meta
        if len(history) < limit:
            return None
        limit *= 4


def op_open(m):
    dt = table(m["uri"], m.get("storage"))
    if dt is None:
        return {"exists": False}
    schema = json.loads(dt.schema().to_json())
    meta = find_commit(dt, lambda meta: "table" in meta)
    return {
        "exists": True,
        "version": dt.version(),
        "columns": [{"name": f["name"], "type": f["type"] if isinstance(f["type"], str) else json.dumps(f["type"])} for f in schema["fields"]],
        "record": meta["table"] if meta else None,
    }


def op_load(m):
    dt = table(m["uri"], m.get("storage"))
    if dt is None:
        return {"version": None}
    return held_by(dt, m["appId"])


def held_by(dt, app_id):
    version = dt.transaction_version(app_id)
    if version is None:
        return {"version": None}
    meta = find_commit(dt, lambda meta: meta.get("key") == app_id and meta.get("batchId") == version)
    return {"version": version, "commit": meta}


def read(path):
    return pq.read_table(path) if path else None


def write_quarantine(q, storage, props):
    """Insert the batch's quarantine rows whose id the table does not hold; returns how many."""
    rows = read(q["file"])
    dt = table(q["uri"], storage)
    if dt is None:
        try:
            write_deltalake(q["uri"], rows, mode="append", storage_options=storage or None, commit_properties=props)
            return rows.num_rows
        except CommitFailedError:
            dt = table(q["uri"], storage)  # created by a rival just now: merge into it
    # Quarantine ids are unique per row (src/lake/quarantine.ts): inserting only new ids makes a
    # replayed batch's rows land once.
    result = (
        dt.merge(rows, "t.quarantine_id = s.quarantine_id", source_alias="s", target_alias="t", commit_properties=props)
        .when_not_matched_insert_all()
        .execute()
    )
    return result["num_target_rows_inserted"]


def write_target(t, dt, storage, props):
    """Write the batch's rows (always staged, possibly none, so the commit carries the txn)."""
    good = read(t["good"])
    deletes = read(t.get("deletes"))
    mode = t["mode"]
    nothing = good.num_rows == 0 and (deletes is None or deletes.num_rows == 0)
    # A merge with nothing to merge commits nothing in delta-rs; an empty append still commits
    # the batch's txn and checkpoint.
    if dt is None or mode != "merge" or nothing:
        write_deltalake(
            dt if dt is not None else t["uri"],
            good,
            mode="overwrite" if mode == "overwrite" else "append",
            schema_mode="merge",
            storage_options=None if dt is not None else (storage or None),
            commit_properties=props,
        )
        return good.num_rows, 0
    # Merge: the batch's rows upsert, then its deleted keys go, in the same commit.
    source = good.append_column(OP, pa.array(["u"] * good.num_rows, pa.string()))
    if deletes is not None and deletes.num_rows > 0:
        d = deletes
        for f in good.schema:
            if f.name not in d.column_names:
                d = d.append_column(f.name, pa.nulls(d.num_rows, f.type))
        d = d.append_column(OP, pa.array(["d"] * d.num_rows, pa.string()))
        source = pa.concat_tables([source, d.select(source.column_names)])
    columns = [c for c in source.column_names if c != OP]
    on = " AND ".join(f"t.`{k}` IS NOT DISTINCT FROM s.`{k}`" for k in t["key"])
    values = {f"`{c}`": f"s.`{c}`" for c in columns}
    result = (
        dt.merge(source, on, source_alias="s", target_alias="t", merge_schema=True, commit_properties=props)
        .when_matched_delete(f"s.{OP} = 'd'")
        .when_matched_update(values, f"s.{OP} = 'u'")
        .when_not_matched_insert(values, f"s.{OP} = 'u'")
        .execute()
    )
    return good.num_rows, result["num_target_rows_deleted"]


def op_write(m):
    storage = m.get("storage")
    t, q, txn = m["table"], m.get("quarantine"), m["txn"]
    meta = {META: json.dumps(txn["metadata"], separators=(",", ":"))}
    quarantined = None
    for attempt in range(1, MAX_ATTEMPTS + 1):
        dt = table(t["uri"], storage)
        held = dt.transaction_version(txn["appId"]) if dt is not None else None
        expect = txn.get("expect")
        # Compare-and-set: the table must hold exactly the batch before this one (else another
        # writer moved the stream: the TypeScript side decides retry or rival from its commit).
        if expect is not None and (held or 0) != expect:
            return {"status": "held", **held_by(dt, txn["appId"]), "attempts": attempt}
        if txn.get("skipHeld") and held is not None and held >= txn["version"]:
            return {"status": "held", **held_by(dt, txn["appId"]), "attempts": attempt}
        try:
            if q is not None and quarantined is None:
                quarantined = write_quarantine(q, storage, CommitProperties(custom_metadata=meta))
            props = CommitProperties(app_transactions=[Transaction(txn["appId"], txn["version"])], custom_metadata=meta)
            written, deleted = write_target(t, dt, storage, props)
            return {"status": "written", "good": written, "deleted": deleted, "quarantined": quarantined or 0, "attempts": attempt}
        except CommitFailedError as e:
            last = e
    raise RuntimeError(f"gave up after {MAX_ATTEMPTS} commits lost to other writers of {t['uri']}: {last}")


def op_read(m):
    dt = table(m["uri"], m.get("storage"))
    if dt is None:
        return {"exists": False}
    pq.write_table(dt.to_pyarrow_table(), m["out"])
    return {"exists": True, "version": dt.version()}


OPS = {"open": op_open, "load": op_load, "write": op_write, "read": op_read}


def die_with_parent():
    """On Linux, go when the Node process goes: a helper left committing after its writer died
    would race the writer's successor for the same batch (the txn fence would hold, but the
    successor would see a rival)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:
            os._exit(1)
    except (OSError, AttributeError):
        pass


def main():
    die_with_parent()
    send({"event": "ready", "pid": os.getpid()})
    for line in sys.stdin:
        m = json.loads(line)
        if m.get("op") == "close":
            break
        try:
            reply = OPS[m["op"]](m)
            send({"id": m["id"], "ok": True, **reply})
        except Exception as e:  # every failure goes back to the caller, with its kind
            send({"id": m["id"], "ok": False, "error": f"{type(e).__name__}: {e}", "kind": type(e).__name__})
    _OUT.flush()
    # delta-rs's runtime threads abort a normal interpreter exit; everything is committed by now.
    os._exit(0)


if __name__ == "__main__":
    main()
