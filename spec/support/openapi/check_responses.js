// Validates live responses against the OpenAPI document they claim to follow. Each sample is
// { method, path (the document's template, "/v1/users/{user_id}/tasks"), status, body (the
// parsed JSON, or null for an empty body) }. The response schema is the operation's entry for
// the status (or "default"), dereferenced by @apidevtools/swagger-parser and checked with ajv's
// JSON Schema 2020-12 validator (OpenAPI 3.1). Formats are checked too (date-time is RFC 3339
// with a "T", uuid, date, email), and objects with declared properties are closed: a field the
// document does not declare is an error. Prints "ok", or "error: <sample>: <message>" lines.
// Exit 0 when every sample is valid, 1 when one is not, 2 on usage.
// Usage: node check_responses.js openapi.json samples.json
"use strict";

const fs = require("fs");
const SwaggerParser = require("@apidevtools/swagger-parser");
const Ajv2020 = require("ajv/dist/2020").default;

const FORMATS = {
  "date-time": /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/,
  date: /^\d{4}-\d{2}-\d{2}$/,
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  email: /^[^\s@]+@[^\s@]+\.[^\s@.]+$/,
  uri: /^[a-z][a-z0-9+.-]*:\S+$/i,
};

// Closes every object schema that declares properties (a copy: the document stays as it is).
function closed(schema, seen = new Map()) {
  if (schema === null || typeof schema !== "object") return schema;
  if (seen.has(schema)) return seen.get(schema);
  const out = Array.isArray(schema) ? [] : {};
  seen.set(schema, out);
  for (const [k, v] of Object.entries(schema)) out[k] = closed(v, seen);
  if (!Array.isArray(schema) && schema.properties && schema.additionalProperties === undefined) {
    out.additionalProperties = false;
  }
  return out;
}

async function main() {
  const [docFile, samplesFile] = process.argv.slice(2);
  if (!docFile || !samplesFile) {
    process.stderr.write("usage: node check_responses.js openapi.json samples.json\n");
    return 2;
  }
  const doc = await SwaggerParser.dereference(docFile);
  const samples = JSON.parse(fs.readFileSync(samplesFile, "utf8"));
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  for (const [name, re] of Object.entries(FORMATS)) ajv.addFormat(name, re);
  let bad = 0;
  for (const s of samples) {
    const where = `${s.method.toUpperCase()} ${s.path} ${s.status}`;
    const op = (doc.paths[s.path] || {})[s.method.toLowerCase()];
    if (!op) {
      process.stdout.write(`error: ${where}: no such operation\n`);
      bad++;
      continue;
    }
    const resp = op.responses[String(s.status)] || op.responses.default;
    if (!resp) {
      process.stdout.write(`error: ${where}: the document has no response for this status\n`);
      bad++;
      continue;
    }
    const content = resp.content && resp.content["application/json"];
    if (!content) {
      if (s.body !== null && s.body !== undefined) {
        process.stdout.write(`error: ${where}: a body where the document declares none\n`);
        bad++;
      }
      continue;
    }
    const validate = ajv.compile(closed(content.schema));
    if (!validate(s.body)) {
      for (const e of validate.errors) {
        process.stdout.write(`error: ${where}: ${e.instancePath || "/"} ${e.message}\n`);
      }
      bad++;
    }
  }
  if (bad === 0) process.stdout.write("ok\n");
  return bad === 0 ? 0 : 1;
}

main().then((code) => { process.exitCode = code; }, (err) => {
  process.stdout.write("error: " + err.message + "\n");
  process.exitCode = 1;
});
