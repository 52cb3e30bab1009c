"""LakeLogic's Delta Lake helper: delta-rs (PyPI `deltalake`) driven by the TypeScript side.

    python helper.py     requests on stdin, one JSON reply per request on stdout

Ops: open, load, write (the lake writer's), read, latest, changes (reading), inspect
(src/lake/inspect.ts), maintain (src/lake/maintain.ts).

The TypeScript side validates the batch and stages its rows as Parquet files (src/lake/delta-writer.ts);
this process commits them to the Delta tables. It also reads tables back: a snapshot (`read`), and
the rows each version added, page by page (`latest`, `changes`: the lake source). Each target commit carries a Delta transaction
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
import pyarrow.compute as pc  # noqa: E402
import pyarrow.fs as pafs  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from deltalake import CommitProperties, DeltaTable, PostCommitHookProperties, Transaction, write_deltalake  # noqa: E402
from deltalake.exceptions import CommitFailedError, TableNotFoundError  # noqa: E402
from deltalake.fs import DeltaStorageHandler  # noqa: E402

META = "lakelogic"
OP = "_lakelogic_op"
# A commit lost to a rival is re-read and tried again; a stream's own batches never race for
# long, so this bound only stops a livelock among many writers of one table.
MAX_ATTEMPTS = 50
CHANGE_FEED = {"delta.enableChangeDataFeed": "true"}


def send(msg):
    _OUT.write(json.dumps(msg, allow_nan=False, default=str) + "\n")
    _OUT.flush()


# The tables this process opened, brought up to date before each use. Loading a table replays
# its log from the last checkpoint, a cost that grows with every commit (measured at 100
# commits: 88 ms per load, against 11 ms to read the commits since the last use).
_TABLES = {}


def table(uri, storage):
    key = (uri, json.dumps(storage or {}, sort_keys=True))
    dt = _TABLES.get(key)
    if dt is not None:
        try:
            dt.update_incremental()
            return dt
        except Exception:  # the table went away or its log was cut under us: load it afresh
            _TABLES.pop(key, None)
    try:
        dt = DeltaTable(uri, storage_options=storage or None)
    except TableNotFoundError:
        return None
    _TABLES[key] = dt
    return dt


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


def key_range(source, key):
    """`t.k BETWEEN lo AND hi` for the first key column of the merge's source, or "" when it cannot
    be spelt exactly (NULLs, or a type other than integer or string). Implied by the key equality,
    so the merge means the same; delta-rs prunes the target's files by their statistics with it
    instead of reading the whole table (measured: 3-4x faster merges on a 600k-row table)."""
    col = source.column(key[0])
    if col.null_count > 0 or len(col) == 0:
        return ""
    bounds = pc.min_max(col)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if pa.types.is_integer(col.type):
        spell = str
    elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        spell = lambda v: "'" + v.replace("'", "''") + "'"  # noqa: E731
    else:
        return ""
    return f" AND (t.`{key[0]}` >= {spell(lo)}) AND (t.`{key[0]}` <= {spell(hi)})"


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
            # A merge table records its changes (Change Data Feed): a reader of its versions (the
            # lake source, Spark's readChangeFeed) gets the rows a merge changed, not every row
            # of the files it rewrote.
            configuration=CHANGE_FEED if dt is None and mode == "merge" else None,
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
    on = " AND ".join(f"(t.`{k}` IS NOT DISTINCT FROM s.`{k}`)" for k in t["key"]) + key_range(source, t["key"])
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
        # The same batch sent again (a crash between this commit and the stream's checkpoint): the
        # table has it when its commit ended at the same cursor. A batch the resumed run cut
        # elsewhere holds other records, and is written (merged onto what it shares).
        skip = txn.get("skipHeld")
        if skip is not None and held == txn["version"]:
            found = held_by(dt, txn["appId"])
            if (found.get("commit") or {}).get("cursorDigest") == skip:
                return {"status": "held", **found, "attempts": attempt}
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
    pq.write_table(dt.to_pyarrow_table(columns=m.get("columns")), m["out"])
    return {"exists": True, "version": dt.version()}


def type_name(t):
    """A Delta schema type as one word a person reads: `long`, `array<string>`, `struct<a: long>`."""
    if isinstance(t, str):
        return t
    kind = t.get("type")
    if kind == "array":
        return "array<%s>" % type_name(t.get("elementType"))
    if kind == "map":
        return "map<%s, %s>" % (type_name(t.get("keyType")), type_name(t.get("valueType")))
    if kind == "struct":
        return "struct<%s>" % ", ".join("%s: %s" % (f["name"], type_name(f["type"])) for f in t.get("fields", []))
    return json.dumps(t)


def op_inspect(m):
    """A table as `lakelogic show` reports it: its columns, its row count, and its newest commits
    that carry LakeLogic's metadata (a batch), newest first, at most `commits` of them."""
    dt = table(m["uri"], m.get("storage"))
    if dt is None:
        return {"exists": False}
    schema = json.loads(dt.schema().to_json())
    wanted, limit = m.get("commits", 10), 16
    while True:
        history = dt.history(limit)
        commits = []
        for commit in history:
            meta = metadata_of(commit)
            if meta is not None and isinstance(meta.get("batchId"), int):
                metrics = commit.get("operationMetrics") or {}
                commits.append({"version": commit.get("version"), "timestamp": commit.get("timestamp"), "operation": commit.get("operation"), "meta": meta, "metrics": metrics})
        # Maintenance commits carry no batch: look further back until enough batches are found.
        if len(commits) >= wanted or len(history) < limit:
            break
        limit *= 4
    return {
        "exists": True,
        "version": dt.version(),
        "columns": [{"name": f["name"], "type": type_name(f["type"])} for f in schema["fields"]],
        "rows": dt.to_pyarrow_dataset().count_rows(),
        "commits": commits[:wanted],
    }


# ── reading a table's changes, version by version (the `lake` source, src/sources/lake) ──

VERSION_COLUMN = "__lakelogic_version"
ROW_COLUMN = "__lakelogic_row"
# Rows a change-data file holds that are a row's new state; preimages and deletions are not rows.
NEW_STATE = ("insert", "update_postimage")


class Readers:
    """The rows of the last version read per table: a version larger than a page is read once,
    not once per page."""

    def __init__(self):
        self.rows = {}

    def version_rows(self, uri, storage, fs, version, types):
        cached = self.rows.get(uri)
        if cached is not None and cached[0] == version:
            return cached[1]
        rows = changed_rows(fs, version, types)
        self.rows[uri] = (version, rows)
        return rows


READERS = Readers()


def commit_actions(fs, version):
    path = "_delta_log/%020d.json" % version
    try:
        with fs.open_input_stream(path) as f:
            text = f.read().decode("utf-8")
    except (FileNotFoundError, OSError) as e:
        raise LookupError(
            "version %d of the table is no longer in its log (%s): the log was cleaned up after a checkpoint "
            "(delta.logRetentionDuration). Start the reader again from a newer position" % (version, e)
        ) from e
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def plain_types(t):
    """View and large string / binary columns as plain ones: files of one version may differ."""
    for i, f in enumerate(t.schema):
        if pa.types.is_string_view(f.type) or pa.types.is_large_string(f.type):
            t = t.set_column(i, f.name, t.column(i).cast(pa.string()))
        elif pa.types.is_binary_view(f.type) or pa.types.is_large_binary(f.type):
            t = t.set_column(i, f.name, t.column(i).cast(pa.binary()))
    return t


def data_file(fs, path, partition_values, types):
    """One data or change file's rows, with its partition columns (not stored in the file)."""
    from urllib.parse import unquote

    if "://" in path:
        other, inner = pafs.FileSystem.from_uri(path)
        t = pq.read_table(inner, filesystem=other)
    else:
        t = pq.read_table(unquote(path), filesystem=fs)
    for name, value in (partition_values or {}).items():
        if name in t.column_names:
            continue
        column = pa.array([value] * t.num_rows, pa.string())
        target = types.get(name)
        if target is not None:
            try:
                column = column.cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass  # kept as the log's text
        t = t.append_column(name, column)
    return plain_types(t)


def arrow_type(delta_type):
    simple = {"long": pa.int64(), "integer": pa.int32(), "short": pa.int16(), "byte": pa.int8(), "double": pa.float64(),
              "float": pa.float32(), "boolean": pa.bool_(), "string": pa.string(), "date": pa.date32(),
              "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us")}
    if isinstance(delta_type, str) and delta_type.startswith("decimal("):
        p, s = delta_type[8:-1].split(",")
        return pa.decimal128(int(p), int(s))
    return simple.get(delta_type) if isinstance(delta_type, str) else None


def changed_rows(fs, version, types):
    """The rows version `version` added, in commit order (actions, then rows of each file):

    - a commit with change-data files (`cdc`, tables with delta.enableChangeDataFeed): their
      inserts and update postimages, exactly the rows the commit inserted or changed;
    - else the files it added with dataChange true: an append's rows, or everything a merge or
      overwrite rewrote (unchanged rows of a rewritten file included). A file added again with a
      deletion vector (its path also removed in the commit) brings no new rows; commits that only
      rearrange data (optimize: dataChange false) bring none.
    """
    actions = commit_actions(fs, version)
    cdc = [a["cdc"] for a in actions if "cdc" in a]
    parts = []
    if cdc:
        for c in cdc:
            t = data_file(fs, c["path"], c.get("partitionValues"), types)
            keep = pc.is_in(t.column("_change_type"), value_set=pa.array(NEW_STATE))
            parts.append(t.filter(keep).drop_columns(["_change_type"]))
    else:
        removed = {a["remove"]["path"] for a in actions if "remove" in a}
        for a in actions:
            add = a.get("add")
            if add is None or not add.get("dataChange", True) or add["path"] in removed:
                continue
            if add.get("deletionVector"):
                raise ValueError("version %d adds a file with a deletion vector that no remove explains: the lake source does not read it" % version)
            parts.append(data_file(fs, add["path"], add.get("partitionValues"), types))
    parts = [p for p in parts if p.num_rows > 0]
    if not parts:
        return None
    return pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]


def plain_timestamps(t):
    """Timestamps as UTC microseconds without a zone, the lake's TIMESTAMP (src/lake/read.ts)."""
    for i, f in enumerate(t.schema):
        if pa.types.is_timestamp(f.type) and (f.type.tz is not None or f.type.unit != "us"):
            t = t.set_column(i, f.name, t.column(i).cast(pa.timestamp("us")))
    return t


def op_latest(m):
    dt = table(m["uri"], m.get("storage"))
    return {"version": None if dt is None else dt.version()}


def op_changes(m):
    """Up to `limit` rows from position (version, row) through version `until`, into `out`.

    A position is a version and how many of its rows come before it; the rows of a version come
    in the same order every time (changed_rows), so a read resumes exactly. `scanned` is the
    last version looked at whole."""
    uri, storage = m["uri"], m.get("storage")
    dt = table(uri, storage)
    if dt is None:
        return {"rows": 0, "scanned": -1}
    if (dt.metadata().configuration or {}).get("delta.columnMapping.mode", "none") != "none":
        raise ValueError(
            "the table uses column mapping (delta.columnMapping.mode): its files store columns under other names; "
            "the lake source does not read such tables (read them with Spark or delta-rs)"
        )
    # Partition values are text in the log: typed by the table's schema.
    types = {}
    for f in json.loads(dt.schema().to_json()).get("fields", []):
        t = arrow_type(f.get("type"))
        if t is not None:
            types[f["name"]] = t
    fs = pafs.PyFileSystem(DeltaStorageHandler(dt.table_uri, storage or None))
    version, skip, until, limit = m["version"], m["row"], min(m["until"], dt.version()), m["limit"]
    pages, taken, scanned = [], 0, version - 1
    while version <= until and taken < limit:
        rows = READERS.version_rows(uri, storage, fs, version, types)
        n = 0 if rows is None else rows.num_rows
        if skip < n:
            page = rows.slice(skip, limit - taken)
            page = page.append_column(VERSION_COLUMN, pa.array([version] * page.num_rows, pa.int64()))
            page = page.append_column(ROW_COLUMN, pa.array(range(skip + 1, skip + 1 + page.num_rows), pa.int64()))
            pages.append(page)
            taken += page.num_rows
            if skip + page.num_rows < n:
                break
        scanned = version
        version, skip = version + 1, 0
    if taken:
        table_ = pa.concat_tables(pages, promote_options="permissive") if len(pages) > 1 else pages[0]
        pq.write_table(plain_timestamps(table_), m["out"])
    return {"rows": taken, "scanned": scanned}


# ── maintenance (src/lake/maintain.ts) ──


def files_of(dt):
    """The table's live data files: how many, how many bytes."""
    adds = pa.table(dt.get_add_actions(flatten=True))
    sizes = adds.column("size_bytes").to_pylist() if adds.num_rows > 0 else []
    return {"files": len(sizes), "bytes": int(sum(s or 0 for s in sizes)), "version": dt.version()}


# Maintenance commits never expire log entries: a stream's checkpoint is the metadata of the commit
# that set its transaction version (src/lake/table-checkpoint.ts), and a log cleanup could take
# the commit holding a stream's newest batch. So no cleanup_metadata, and delta-rs's post-commit
# log expiry is turned off for these commits.
KEEP_LOG = PostCommitHookProperties(create_checkpoint=False, cleanup_expired_logs=False)


def maintenance_props(what):
    return CommitProperties(custom_metadata={META: json.dumps({"maintenance": what}, separators=(",", ":"))})


def op_maintain(m):
    """Compact small files, vacuum unreferenced ones older than the retention, write a checkpoint.

    A compaction that loses its commit to a concurrent writer (a stream's merge rewrote a file it
    read) is planned again on the re-read table, at most `maxAttempts` times: the writer's commit
    always stands, the compaction either lands on top of it or reports that it gave up."""
    uri, storage = m["uri"], m.get("storage")
    dt = table(uri, storage)
    if dt is None:
        return {"exists": False}
    before = files_of(dt)
    hours, allow = m["retainHours"], bool(m.get("allowShortRetention"))
    if not allow:
        # delta-rs refuses a retention below the table's delta.deletedFileRetentionDuration (168 h
        # unless the table sets it); ask before anything is rewritten.
        try:
            dt.vacuum(retention_hours=hours, dry_run=True, enforce_retention_duration=True)
        except Exception as e:  # DeltaError carries delta-rs's own explanation
            if "retention" not in str(e).lower():
                raise
            return {"exists": True, "refused": str(e), "before": before}
    steps = []
    attempts, compacted = 0, None
    for attempts in range(1, m.get("maxAttempts", 10) + 1):
        dt = table(uri, storage)
        try:
            compacted = dt.optimize.compact(commit_properties=maintenance_props("compact"), post_commithook_properties=KEEP_LOG)
            break
        except CommitFailedError:
            compacted = None
    if compacted is None:
        steps.append({"kind": "compact", "status": "gave-up", "attempts": attempts, "filesRemoved": 0, "filesAdded": 0})
    else:
        steps.append({"kind": "compact", "status": "done", "attempts": attempts, "filesRemoved": compacted["numFilesRemoved"], "filesAdded": compacted["numFilesAdded"]})
    deleted = None
    for attempt in range(1, MAX_ATTEMPTS + 1):
        dt = table(uri, storage)
        try:
            # full: also files no commit ever listed (a compaction's output whose commit was lost,
            # a crashed writer's) once older than the retention; only tombstoned files below the
            # table's minimum, where a writer's staged file could still be young.
            deleted = dt.vacuum(
                retention_hours=hours,
                dry_run=False,
                enforce_retention_duration=not allow,
                full=not allow,
                commit_properties=maintenance_props("vacuum"),
                post_commithook_properties=KEEP_LOG,
            )
            break
        except CommitFailedError:
            continue
    steps.append({"kind": "vacuum", "status": "done" if deleted is not None else "gave-up", "retainHours": hours, "filesDeleted": len(deleted or [])})
    dt = table(uri, storage)
    dt.create_checkpoint()
    steps.append({"kind": "checkpoint", "status": "done", "version": dt.version()})
    return {"exists": True, "before": before, "after": files_of(dt), "steps": steps}


OPS = {
    "open": op_open,
    "load": op_load,
    "write": op_write,
    "read": op_read,
    "inspect": op_inspect,
    "latest": op_latest,
    "changes": op_changes,
    "maintain": op_maintain,
}


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
