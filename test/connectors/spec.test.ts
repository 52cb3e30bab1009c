import { describe, expect, it } from "vitest";
import { parseOptions, renderSpecMarkdown, requirePeer, type ComponentSpec } from "../../src/sources/core/spec.js";
import { ConfigError, MissingDependencyError } from "../../src/errors.js";

const spec: ComponentSpec = {
  type: "demo",
  kind: "cursor",
  summary: "A demo connector.",
  options: {
    brokers: { type: "string[]", required: true, description: "Broker addresses" },
    topic: { type: "string", required: true, description: "Topic to read" },
    autoOffsetReset: { type: "string", enum: ["earliest", "latest"], default: "earliest", description: "Where new partitions start" },
    maxBytes: { type: "integer", min: 1, default: 1024, description: "Fetch size" },
    password: { type: "string", secret: true, description: "SASL password" },
  },
};

describe("parseOptions", () => {
  it("applies defaults, accepts snake_case and comma-separated lists", () => {
    expect(parseOptions(spec, { type: "demo", brokers: "a:1, b:2", topic: "t", auto_offset_reset: "latest" })).toEqual({
      brokers: ["a:1", "b:2"],
      topic: "t",
      autoOffsetReset: "latest",
      maxBytes: 1024,
    });
  });

  it("names the option and what was expected", () => {
    expect(() => parseOptions(spec, { brokers: ["a"] })).toThrow(/source demo: topic: is required/);
    expect(() => parseOptions(spec, { brokers: ["a"], topic: "t", autoOffsetReset: "middle" })).toThrow(
      /autoOffsetReset: expected one of earliest, latest; got "middle"/,
    );
    expect(() => parseOptions(spec, { brokers: ["a"], topic: "t", maxBytes: 0 })).toThrow(/expected a number >= 1/);
    const err = (() => {
      try {
        parseOptions(spec, { brokers: ["a"], topic: "t", tpoic: "x" });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/unknown option; did you mean "topic"\?/);
  });

  it("never echoes secrets", () => {
    expect(() => parseOptions(spec, { brokers: ["a"], topic: "t", password: 42 })).toThrow(/got <secret>/);
  });

  it("renders docs from the spec", () => {
    const md = renderSpecMarkdown(spec);
    expect(md).toContain("| `topic` | string | yes |");
    expect(md).toContain("`earliest` \\| `latest`");
  });
});

describe("requirePeer", () => {
  it("names the package to install when it is missing", async () => {
    const err = await requirePeer("lakelogic-no-such-package", "The demo connector").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingDependencyError);
    expect((err as Error).message).toContain("npm install lakelogic-no-such-package");
  });
});
