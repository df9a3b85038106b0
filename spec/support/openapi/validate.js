// Validates one OpenAPI document with @apidevtools/swagger-parser (structure against the
// official OpenAPI 3.0/3.1 schema, then $refs and path/parameter rules) and prints "ok", or
// "error: <message>" per problem; exit 0 when valid, 1 when not, 2 on usage.
// Usage: node validate.js path/to/openapi.json
"use strict";

const SwaggerParser = require("@apidevtools/swagger-parser");

async function main() {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write("usage: node validate.js FILE\n");
    return 2;
  }
  try {
    // validate() dereferences, so it gets its own copy of the document on each call.
    await SwaggerParser.validate(file);
    process.stdout.write("ok\n");
    return 0;
  } catch (err) {
    const details = Array.isArray(err.details) ? err.details : [];
    process.stdout.write("error: " + err.message + "\n");
    for (const d of details) {
      process.stdout.write("error: " + (d.instancePath || "") + " " + (d.message || "") + "\n");
    }
    return 1;
  }
}

main().then((code) => { process.exitCode = code; });
