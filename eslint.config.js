// Lint for the whole tree: typescript-eslint's type-aware recommended set, plus size limits on src/.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

export default defineConfig(
  { ignores: ["node_modules/", "dist/", ".bench-build/", "coverage/", "lake/", ".lakelogic/"] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // `_`-prefixed names mark parameters an interface requires but this implementation ignores.
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_" },
      ],
      // Interface methods return Promises; `async` keeps a synchronous throw a rejection.
      "@typescript-eslint/require-await": "off",
      // `Cursor` is `unknown` by design, and `"a" | string` documents the known values of an open set.
      "@typescript-eslint/no-redundant-type-constituents": "off",
    },
  },
  {
    // The product code: one idea per file and per function (workflows/ and activities/ too).
    files: ["src/**/*.ts", "workflows/**/*.ts", "activities/**/*.ts"],
    rules: {
      "max-lines": ["error", { max: 500, skipBlankLines: false, skipComments: false }],
      "max-lines-per-function": ["error", { max: 120, skipBlankLines: false, skipComments: false }],
    },
  },
  {
    // Tests read parsed JSON and fakes' payloads as `any` on purpose; assertions check the shape.
    files: ["test/**/*.ts"],
    rules: {
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-return": "off",
    },
  },
  {
    // Plain JS (the bin launcher, tool configs) is outside the TypeScript project: no type information.
    files: ["**/*.js", "**/*.cjs"],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { process: "readonly", URL: "readonly" } },
  },
  { files: ["**/*.cjs"], languageOptions: { sourceType: "commonjs" } },
);
