/**
 * The vocabulary of rule expressions: the functions a rule may call, the ones it must never call,
 * and the SQL words the expression walker accepts, refuses or reads as type names.
 */

/**
 * Pure scalar functions a rule may call. Nothing here reads files, network, settings or clocks, and
 * no result outgrows its input by more than a small constant factor (case mapping, Unicode
 * normalisation, a date format): functions that build strings are refused (`STRING_BUILDERS`), and
 * `json_extract` / `json_extract_string` take only a literal, non-recursive path (see the guard).
 */
export const ALLOWED_FUNCTIONS: ReadonlySet<string> = new Set([
  // strings
  "length", "len", "char_length", "character_length", "octet_length", "strlen", "lower", "lcase",
  "upper", "ucase", "trim", "ltrim", "rtrim", "substr", "substring", "left", "right",
  "reverse", "strpos", "instr", "contains",
  "starts_with", "ends_with", "prefix", "suffix", "regexp_matches", "regexp_full_match",
  "regexp_extract", "split_part", "ascii", "unicode", "ord", "chr", "md5",
  "sha256", "levenshtein", "damerau_levenshtein", "jaro_winkler_similarity", "jaccard",
  "strip_accents", "nfc_normalize", "like_escape", "ilike_escape",
  // numbers
  "abs", "round", "floor", "ceil", "ceiling", "trunc", "sign", "sqrt", "cbrt", "power", "pow", "exp",
  "ln", "log", "log10", "log2", "mod", "greatest", "least", "isnan", "isinf", "isfinite",
  // nulls and conditionals
  "coalesce", "nullif", "ifnull", "if",
  // dates and times (pure: they take their input, never the clock)
  "date_part", "datepart", "date_trunc", "datetrunc", "date_diff", "datediff", "date_sub",
  "date_add", "year", "month", "day", "dayofmonth", "dayofweek", "dayofyear", "isodow", "hour",
  "minute", "second", "millisecond", "microsecond", "week", "weekofyear", "yearweek", "quarter",
  "epoch", "epoch_ms", "make_date", "make_time", "make_timestamp", "strftime", "strptime",
  "try_strptime", "to_timestamp", "last_day", "monthname", "dayname", "isoyear",
  // JSON and lists (read a value of the row, nothing else)
  "json_valid", "json_extract", "json_extract_string", "json_type", "json_array_length",
  "json_exists", "array_length", "list_contains", "array_contains", "list_has",
]);

/** Why string- and list-building functions and `||` are refused; shown after "is not allowed: it". */
export const BUILDS_STRINGS =
  "builds a new string or list that can be far larger than its input; a rule is a boolean check and has no need to build one";

/** Functions whose result can outgrow their input without bound: a row of bytes becomes gigabytes. */
const STRING_BUILDERS = [
  "repeat", "lpad", "rpad", "printf", "format", "replace", "regexp_replace", "concat", "concat_ws",
  "translate", "list_concat", "list_cat", "array_concat", "array_cat", "list_append", "array_append",
  "array_push_back", "list_prepend", "array_prepend", "array_push_front", "string_split", "str_split",
  "string_to_array", "string_split_regex", "str_split_regex", "regexp_split_to_array",
  "list_value", "list_pack", "array_value", "range", "generate_series", "to_json", "json_object",
  "json_array", "json_merge_patch", "struct_pack", "map",
];

/** JSON functions that return one copy of the document per match of their path. */
export const JSON_EXTRACT_FUNCTIONS: ReadonlySet<string> = new Set(["json_extract", "json_extract_string"]);

/** Functions people reach for that must never run inside a rule, with the reason shown to them. */
const DANGEROUS: ReadonlyMap<string, string> = new Map(
  Object.entries({
    ...Object.fromEntries(STRING_BUILDERS.map((name) => [name, BUILDS_STRINGS])),
    read_csv: "reads files", read_csv_auto: "reads files", read_json: "reads files",
    read_json_auto: "reads files", read_json_objects: "reads files", read_ndjson: "reads files",
    read_ndjson_auto: "reads files", read_ndjson_objects: "reads files", read_parquet: "reads files",
    parquet_scan: "reads files", parquet_metadata: "reads files", parquet_schema: "reads files",
    parquet_file_metadata: "reads files", parquet_kv_metadata: "reads files", read_text: "reads files",
    read_blob: "reads files", csv_scan: "reads files", sniff_csv: "reads files", glob: "lists files",
    read_xlsx: "reads files", st_read: "reads files", delta_scan: "reads files",
    iceberg_scan: "reads files", sqlite_scan: "opens databases", sqlite_attach: "opens databases",
    postgres_scan: "opens databases", postgres_attach: "opens databases",
    postgres_query: "opens databases", postgres_execute: "opens databases",
    mysql_scan: "opens databases", mysql_query: "opens databases", query: "runs SQL",
    query_table: "runs SQL", getenv: "reads the environment", current_setting: "reads settings",
    http_get: "reaches the network", http_post: "reaches the network", http_head: "reaches the network",
    load_aws_credentials: "reads credentials", nextval: "changes state", currval: "reads state",
    setseed: "changes state", random: "is not deterministic", uuid: "is not deterministic",
    gen_random_uuid: "is not deterministic", now: "reads the clock", today: "reads the clock",
    get_current_time: "reads the clock", get_current_timestamp: "reads the clock",
    transaction_timestamp: "reads the clock", current_localtimestamp: "reads the clock",
    current_database: "reads the session", current_schema: "reads the session",
    current_schemas: "reads the session", current_query: "reads the session",
    current_user: "reads the session", version: "reads the system", txid_current: "reads the session",
  }),
);

/** Words that are never column references when unquoted; most start a statement or a subquery. */
export const FORBIDDEN_KEYWORDS: ReadonlySet<string> = new Set([
  // statements
  "select", "insert", "update", "delete", "merge", "upsert", "create", "drop", "alter", "truncate",
  "attach", "detach", "copy", "pragma", "set", "reset", "install", "load", "call", "export",
  "import", "execute", "prepare", "deallocate", "vacuum", "checkpoint", "force", "begin", "commit",
  "rollback", "abort", "use", "explain", "describe", "show", "summarize", "grant", "revoke",
  "analyze", "analyse", "values", "returning",
  // query clauses and subquery forms
  "exists", "with", "recursive", "table", "where", "group", "having", "order", "limit", "offset",
  "fetch", "qualify", "window", "over", "filter", "within", "union", "except", "intersect",
  "join", "lateral", "using", "into", "pivot", "unpivot", "pivot_longer", "pivot_wider", "all",
  "any", "some", "array", "lambda", "asc", "desc", "for", "do", "only", "on", "default", "check",
  "collate", "column", "constraint", "references", "foreign", "primary", "unique", "variadic",
  "symmetric", "asymmetric", "leading", "trailing", "both", "placing", "initially", "deferrable",
  // session values and clocks written without parentheses
  "current_user", "session_user", "user", "current_role", "current_catalog", "current_schema",
  "current_date", "current_time", "current_timestamp", "localtime", "localtimestamp",
]);

/**
 * Aggregates a dataset `sql` rule may call (its query gives one value over the batch's good
 * rows). None builds a value that grows with the input (no string_agg, list, array_agg).
 */
export const AGGREGATE_FUNCTIONS: ReadonlySet<string> = new Set([
  "count", "count_if", "countif", "sum", "avg", "mean", "min", "max", "median", "stddev", "stddev_samp",
  "stddev_pop", "variance", "var_samp", "var_pop", "bool_and", "bool_or", "approx_count_distinct",
]);

/** Words that start a statement (or a subquery, after a parenthesis). */
export const STATEMENT_WORDS = new Set([
  "select", "insert", "update", "delete", "merge", "upsert", "create", "drop", "alter", "truncate",
  "attach", "detach", "copy", "pragma", "set", "reset", "install", "load", "call", "export",
  "import", "execute", "prepare", "deallocate", "vacuum", "checkpoint", "force", "begin", "commit",
  "rollback", "abort", "use", "explain", "describe", "show", "summarize", "grant", "revoke",
  "analyze", "analyse", "values", "with", "table", "pivot", "unpivot",
]);
export const CLOCK_WORDS = new Set(["current_date", "current_time", "current_timestamp", "localtime", "localtimestamp"]);

/** Expression keywords accepted anywhere (a few more, such as AS and DISTINCT, are accepted in one position only). */
export const EXPRESSION_KEYWORDS: ReadonlySet<string> = new Set([
  "and", "or", "not", "is", "null", "true", "false", "unknown", "in", "between", "like", "ilike",
  "similar", "to", "escape", "case", "when", "then", "else", "end",
]);

/** Words that may make up a type name after `AS` or `::`. */
export const TYPE_WORDS: ReadonlySet<string> = new Set([
  "boolean", "bool", "logical", "tinyint", "int1", "smallint", "int2", "short", "integer", "int",
  "int4", "int32", "signed", "bigint", "int8", "int64", "long", "hugeint", "int128", "utinyint",
  "usmallint", "uinteger", "ubigint", "uhugeint", "float", "float4", "real", "double", "float8",
  "decimal", "numeric", "dec", "varchar", "char", "character", "bpchar", "text", "string", "date",
  "time", "timetz", "timestamp", "timestamptz", "datetime", "timestamp_s", "timestamp_ms",
  "timestamp_ns", "timestamp_us", "interval", "uuid", "json", "blob", "bytea", "binary", "varbinary",
]);
/** Words that continue a multi-word type: DOUBLE PRECISION, TIMESTAMP WITH TIME ZONE, … */
export const TYPE_CONTINUATIONS: ReadonlySet<string> = new Set(["precision", "varying", "with", "without", "time", "zone"]);
export const TYPED_LITERAL_WORDS = new Set(["date", "time", "timestamp", "timestamptz", "interval"]);
export const INTERVAL_UNITS = new Set([
  "year", "years", "month", "months", "week", "weeks", "day", "days", "hour", "hours", "minute",
  "minutes", "second", "seconds", "millisecond", "milliseconds", "microsecond", "microseconds",
]);

/** Why a function must never run inside a rule, or undefined when it is merely not allowed. */
export function functionDanger(name: string): string | undefined {
  return (
    DANGEROUS.get(name) ??
    (name.startsWith("read_") || name.endsWith("_scan") || name.endsWith("_attach") ? "reads files or databases" : undefined) ??
    (name.startsWith("duckdb_") || name.startsWith("pragma_") ? "reads database metadata" : undefined)
  );
}
