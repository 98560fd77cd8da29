// Checks .cypher files against Neo4j 5's Cypher parser and semantic analysis
// (@neo4j-cypher/language-support). Usage: node lint.cjs PATH... (files or folders).
// - A migration (a path with /schema/) holds several statements separated by ';' and is
//   checked statement by statement, its comment lines dropped first (they may contain ';').
// - `__LABEL__` is the label some statements get at run time (crates/graph: query_file! with a
//   label); it is checked as a plain label.
// - $parameters are bound at run time, so "not defined" is not an error here.
// Prints FILE: message for each error and a summary; exits 1 when any statement has one.
'use strict';
const fs = require('fs');
const path = require('path');
const { lintCypherQuery } = require('@neo4j-cypher/language-support');

function cypherFiles(p) {
  if (!fs.statSync(p).isDirectory()) return [p];
  return fs.readdirSync(p).sort().flatMap((name) => cypherFiles(path.join(p, name)));
}

function statementsOf(file) {
  const text = fs.readFileSync(file, 'utf8').replace(/__LABEL__/g, 'Label');
  if (!file.split(path.sep).includes('schema')) return [text];
  return text.replace(/^\s*\/\/.*$/gm, '').split(';').filter((s) => s.trim() !== '');
}

const ERROR = 1;
let checked = 0;
let broken = 0;
for (const file of process.argv.slice(2).flatMap(cypherFiles).filter((f) => f.endsWith('.cypher'))) {
  for (const statement of statementsOf(file)) {
    checked += 1;
    const result = lintCypherQuery(statement, {});
    const errors = (result.diagnostics || result).filter(
      (d) => d.severity === ERROR && !/^Parameter \$\S+ is not defined/.test(d.message),
    );
    if (errors.length > 0) {
      broken += 1;
      for (const e of errors) console.log(`${file}: ${e.message}`);
    }
  }
}
console.log(`cypher-lint: ${checked} statements, ${broken} with Neo4j 5 errors`);
process.exit(broken > 0 ? 1 : 0);
