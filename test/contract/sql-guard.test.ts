import { DuckDBInstance } from "../../src/util/duckdb.js";
import { describe, expect, it } from "vitest";
import { analyzeRuleExpression, checkRuleExpression, RuleExpressionError } from "../../src/contract/index.js";

const FIELDS = ["order_id", "amount", "status", "email", "name", "created_at", "payload", "Order"];

function rejects(sql: string, fragment: RegExp | string, fields: string[] = FIELDS): RuleExpressionError {
  let caught: unknown;
  try {
    checkRuleExpression(sql, { fields });
  } catch (e) {
    caught = e;
  }
  expect(caught, `expected ${JSON.stringify(sql)} to be rejected`).toBeInstanceOf(RuleExpressionError);
  const err = caught as RuleExpressionError;
  expect(err.code).toBe("RULE_EXPRESSION");
  expect(err.reason).toMatch(fragment);
  return err;
}

const ACCEPTED = [
  "amount > 0",
  "amount >= 0 AND amount <= 1000000",
  "status IN ('NEW', 'PAID', 'SHIPPED')",
  "status NOT IN ('X')",
  "email IS NOT NULL",
  "email LIKE '%@%.%'",
  "email NOT ILIKE '%@temp-mail.%' AND email NOT LIKE '%@disposable.%'",
  "name <> 'a;b'", // a ';' inside a string literal is data
  "name <> 'it''s -- fine /* really */'",
  "name = 'SELECT * FROM t; DROP TABLE x'",
  "length(trim(name)) BETWEEN 1 AND 200",
  "regexp_matches(email, '^[^@]+@[^@]+$')",
  "lower(status) = 'new' OR upper(status) = 'NEW'",
  "coalesce(amount, 0) >= 0",
  "nullif(trim(name), '') IS NOT NULL",
  "CASE WHEN status = 'PAID' THEN amount > 0 ELSE TRUE END",
  "CAST(amount AS DECIMAL(12, 2)) < 1000",
  "TRY_CAST(order_id AS BIGINT) IS NOT NULL",
  "amount::DOUBLE > 0.5",
  "created_at::TIMESTAMP WITH TIME ZONE IS NOT NULL",
  "CAST(amount AS DOUBLE PRECISION) > 1e-3",
  "created_at >= DATE '2020-01-01'",
  "amount > INTEGER '5'",
  "created_at < TIMESTAMP '2100-01-01 00:00:00'",
  "date_part('year', created_at) >= 2000",
  "year(created_at) > 1999 AND month(created_at) BETWEEN 1 AND 12",
  "created_at - INTERVAL '1 day' < created_at",
  "created_at + INTERVAL 2 HOUR > created_at",
  "order_id IS DISTINCT FROM amount",
  "order_id IS NOT DISTINCT FROM order_id",
  "NOT (status IN ('A', 'B'))",
  "(amount > 0) AND (status <> 'X')",
  "amount % 2 = 0 AND amount * -1 < 0 AND amount>-1",
  '"Order" > 0', // quoted identifier, case preserved
  '"order" > 0', // quoted identifiers compare case-insensitively, as in DuckDB
  "ORDER_ID > 0", // unquoted identifiers too
  "payload.customer.id IS NOT NULL", // struct member access
  "name.lower() = 'x'", // DuckDB method-call syntax on an allowed function
  "starts_with(email, 'a') OR ends_with(email, '.org') OR contains(email, '+')",
  "greatest(amount, 0) = least(amount, 1000)",
  "regexp_matches(name, '\\d+')",
  "status SIMILAR TO 'A%'",
  "email LIKE 'a!%%' ESCAPE '!'",
  "amount > .5",
  "name = 'café ☕'", // non-ASCII inside a literal is data
];

describe("checkRuleExpression: expressions that must be accepted", () => {
  for (const sql of ACCEPTED) {
    it(sql, () => {
      expect(() => checkRuleExpression(sql, { fields: FIELDS })).not.toThrow();
    });
  }

  it("accepts any identifier when the contract declares no fields", () => {
    expect(() => checkRuleExpression("whatever > 0 AND other IS NULL")).not.toThrow();
    expect(() => checkRuleExpression("whatever > 0", { fields: [] })).not.toThrow();
  });

  it("reports the columns (as declared) and functions an expression uses", () => {
    const info = analyzeRuleExpression('LOWER(Status) = \'x\' AND "AMOUNT" > length(email)', { fields: FIELDS });
    expect(info.columns.sort()).toEqual(["amount", "email", "status"]);
    expect(info.functions.sort()).toEqual(["length", "lower"]);
  });
});

describe("checkRuleExpression: hostile rules", () => {
  const cases: Array<[string, RegExp]> = [
    ["1=1; DROP TABLE x", /';' outside a string literal/],
    ["amount > 0;", /';' outside a string literal/],
    ["amount > (SELECT max(a) FROM t)", /subqueries are not allowed/],
    ["amount IN (select 1)", /subqueries are not allowed/],
    ["EXISTS (SELECT 1)", /subqueries are not allowed/],
    ["amount > 0 AND EXISTS(SELECT 1)", /subqueries are not allowed/],
    ["amount > (FROM t)", /subqueries are not allowed/],
    ["amount IS DISTINCT FROM (FROM t)", /subqueries are not allowed/],
    ["amount = ANY (SELECT 1)", /subqueries are not allowed/],
    ["amount > 0 UNION SELECT 1", /reserved SQL word|statements/],
    ["SELECT 1", /statements are not allowed/],
    ["select * from read_csv('x')", /statements are not allowed/],
    ["ATTACH 'x.db'", /statements are not allowed/],
    ["attach 'x.db' AS y", /statements are not allowed/],
    ["COPY t TO 'out.csv'", /statements are not allowed/],
    ["PRAGMA enable_profiling", /statements are not allowed/],
    ["SET enable_external_access = true", /statements are not allowed/],
    ["INSTALL httpfs", /statements are not allowed/],
    ["LOAD httpfs", /statements are not allowed/],
    ["CALL pragma_version()", /statements are not allowed/],
    ["EXPORT DATABASE 'backup_dir'", /statements are not allowed/],
    ["IMPORT DATABASE 'backup_dir'", /statements are not allowed/],
    ["WITH x AS (SELECT 1) SELECT * FROM x", /statements are not allowed/],
    ["amount > 0 OR DROP", /reserved SQL word/],
    ["read_csv('/etc/passwd') IS NOT NULL", /read_csv\(\) is not allowed: it reads files/],
    ["READ_CSV_AUTO('/etc/passwd') IS NOT NULL", /reads files/],
    ["read_parquet('s3://b/x.parquet') IS NULL", /reads files/],
    ["read_text('/etc/shadow') <> ''", /reads files/],
    ["read_blob('/etc/shadow') IS NULL", /reads files/],
    ["parquet_scan('x') IS NULL", /reads files/],
    ["length(glob('/*')) > 0", /lists files/],
    ["getenv('HOME') = ''", /getenv\(\) is not allowed: it reads the environment/],
    ["current_setting('access_mode') = 'x'", /reads settings/],
    ["query('SELECT 1') IS NULL", /runs SQL/],
    ["query_table('t') IS NULL", /runs SQL/],
    ["sqlite_scan('x.db', 't') IS NULL", /opens databases/],
    ["postgres_scan('host=x', 'public', 't') IS NULL", /opens databases/],
    ["duckdb_settings() IS NULL", /reads database metadata/],
    ["pragma_table_info('t') IS NULL", /reads database metadata/],
    ["read_xyz_new('x') IS NULL", /reads files/],
    ["my_custom_scan('x') IS NULL", /reads files/],
    ["http_get('http://x') IS NULL", /network/],
    ['"read_csv"(\'a\') IS NULL', /quoted function names are not allowed/],
    ["name.getenv() = ''", /getenv\(\) is not allowed/],
    ["'HOME'.getenv() = ''", /getenv\(\) is not allowed/],
    ["main.read_csv('x') IS NULL", /reads files/],
    ["x > 0 -- ;", /comments are not allowed/],
    ["amount > 0 --", /comments are not allowed/],
    ["amount > 0 /* hidden */", /comments are not allowed/],
    ["amount >--1", /comments are not allowed/],
    ["now() > created_at", /reads the clock/],
    ["created_at < current_timestamp", /reads the clock/],
    ["created_at < CURRENT_DATE", /reads the clock/],
    ["random() < 0.5", /not deterministic/],
    ["count(*) > 0", /count\(\) is not allowed/],
    ["sum(amount) > 0", /sum\(\) is not allowed/],
    ["lenght(name) > 0", /did you mean length\?/],
    ["E'\\'' = name", /prefixed string literals/],
    ["X'41' = name", /prefixed string literals/],
    ["$$x$$ = name", /dollar-quoted/],
    ["name = $1", /parameters/],
    ["`name` = 'x'", /backtick/],
    ["payload->>'$.a' = 'x'", /lambda or JSON arrow/],
    ["list_transform([1], x -> read_csv('a'))", /'\[' \(list, struct and map literals\)/],
    ["amount @ 1", /operator '@'/],
    ["amount ~ 'x'", /operator '~'/],
    ["amount, status", /',' outside parentheses/],
    ["amount > (1", /unbalanced '\('/],
    ["amount > 1)", /unbalanced '\)'/],
    ["name = 'unterminated", /unterminated string literal/],
    ['"unterminated = 1', /unterminated quoted identifier/],
    ['"" = 1', /empty quoted identifier/],
    ["0x1F = amount", /malformed number/],
    ["1_000 = amount", /malformed number/],
    ["amount AS x", /AS is allowed only inside CAST/],
    ["CAST(amount AS read_csv) > 0", /expected a SQL type name after AS/],
    ["amount::read_csv('x')", /expected a SQL type name after ::/],
    ["DISTINCT amount", /DISTINCT is allowed only/],
    ["amount FROM t", /FROM is not allowed/],
    ["", /empty expression/],
    ["   ", /empty expression/],
    // unicode tricks
    ["amount > 0\uFF1B DROP TABLE x", /non-ASCII character '；'/], // fullwidth semicolon
    ["r\u0435ad_csv('x') IS NULL", /non-ASCII character/], // Cyrillic 'е'
    ["read\u200B_csv('x') IS NULL", /invisible or bidirectional control character U\+200B/],
    ["amount > 0\u00A0", /non-ASCII character/], // no-break space is not whitespace here
    ["name = 'a\u202Eb'", /bidirectional control character U\+202E inside a string literal/],
    ['"na\u200Dme" = 1', /U\+200D inside a quoted identifier/],
    ["amount > 0 \\ 1", /backslash/],
    ["getenv 'HOME' = ''", /is not a typed literal/],
    ["amount IN some_table", /IN must be followed by a parenthesised list/],
    ["amount IN", /IN must be followed by a parenthesised list/],
    ['"getenv" \'HOME\' = \'\'', /is not a typed literal/],
    ["amount > 0 # x", /operator '#'/],
  ];
  for (const [sql, fragment] of cases) {
    it(JSON.stringify(sql), () => {
      rejects(sql, fragment);
    });
  }

  it("names the offending token and its offset", () => {
    const err = rejects("amount > 0 AND getenv('HOME') = ''", /getenv/);
    expect(err.token).toBe("getenv");
    expect(err.offset).toBe(15);
    expect(err.message).toContain("Expression: amount > 0 AND getenv('HOME') = ''");
  });

  it("refuses functions that can blow a row up into gigabytes", () => {
    rejects("length(repeat(name, 1000000000)) > 0", /repeat\(\) is not allowed/);
    rejects("lpad(name, 1000000000, 'x') <> ''", /lpad\(\) is not allowed/);
    rejects("printf('%0999999999d', 1) <> ''", /printf\(\) is not allowed/);
    rejects("name || '-' || status <> ''", /the \|\| operator is not allowed: it builds a new string/);
  });

  it("refuses absurd nesting", () => {
    rejects("(".repeat(100) + "amount" + ")".repeat(100), /nested deeper than 64/);
    expect(() => checkRuleExpression("(".repeat(30) + "amount > 0" + ")".repeat(30), { fields: FIELDS })).not.toThrow();
  });

  it("refuses over-long expressions", () => {
    rejects("amount > 0 AND ".repeat(1000) + "TRUE", /longer than/);
  });
});

describe("checkRuleExpression: column references", () => {
  it("rejects an unknown field with a suggestion", () => {
    rejects("amout > 0", /amout is not a field of this contract \(did you mean amount\?\)/);
  });

  it("lists the fields when nothing is close", () => {
    rejects("zzz > 0", /zzz is not a field of this contract; fields: order_id, amount/);
  });

  it("checks quoted identifiers too", () => {
    rejects('"amout" > 0', /"amout" is not a field/);
  });

  it("does not treat struct members or method names as columns", () => {
    expect(() => checkRuleExpression("payload.nothing_declared = 1", { fields: FIELDS })).not.toThrow();
  });

  it("asks for quotes when a field is named like a reserved word", () => {
    rejects("order > 0", /reserved SQL word.*write it quoted, "Order"/, FIELDS);
    expect(() => checkRuleExpression('"order" > 0', { fields: FIELDS })).not.toThrow();
  });

  it("treats DATE as a column unless a literal follows", () => {
    expect(() => checkRuleExpression("date > '2020-01-01'", { fields: ["date"] })).not.toThrow();
    rejects("date > '2020-01-01'", /date is not a field/, ["amount"]);
  });
});

describe("the accepted expressions are real DuckDB", () => {
  it("each one binds and runs as a WHERE condition over the contract's columns", async () => {
    const db = await DuckDBInstance.create(":memory:");
    const conn = await db.connect();
    try {
      await conn.run(
        'CREATE TABLE t (order_id BIGINT, amount DOUBLE, status VARCHAR, email VARCHAR, name VARCHAR, ' +
          'created_at TIMESTAMP, payload STRUCT(customer STRUCT(id INTEGER), nothing_declared INTEGER), "Order" INTEGER)',
      );
      await conn.run("INSERT INTO t VALUES (1, 2.5, 'NEW', 'a@b.org', 'x', TIMESTAMP '2024-01-01', NULL, 1)");
      const failures: string[] = [];
      for (const sql of ACCEPTED) {
        try {
          await conn.run(`SELECT count(*) FROM t WHERE (${sql})`);
        } catch (e) {
          failures.push(`${sql}: ${(e as Error).message.split("\n")[0]}`);
        }
      }
      expect(failures).toEqual([]);
    } finally {
      conn.closeSync();
      db.closeSync();
    }
  });
});
