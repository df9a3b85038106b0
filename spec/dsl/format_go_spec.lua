-- zever fmt --go (dsl.format with opts.go): writes the Go framework's form of a schema and
-- refuses, with one diagnostic each, the forms of this dialect that the Go compiler does not read.

local format = require "dsl.format"
local compile = require "dsl.compile"
local ir = require "dsl.ir"
local process = require "spec.support.process"
local fs = require "spec.support.files"

local function go(src)
  return format.format(src, "s.zen", { go = true })
end

-- The IR text of src compiled as schema/app/s.zen, with no error, without positions.
local function ir_text(src)
  local r = compile.compile_sources({ ["schema/app/s.zen"] = src }, { "schema/app/s.zen" })
  assert(r.errors == 0, require("dsl.diagnostics").render(r.diags, r.sources))
  return (ir.dump(r.ir):gsub(" @%d+:%d+", ""))
end

describe("zever fmt --go", function()
  it("quotes @validate formats, as the Go grammar requires", function()
    local out = assert(go("entity U { id: uuid @primary  e: string @validate(format: email, min_len: 3) }"))
    assert.are.equal('entity U {\n  id: uuid @primary\n  e: string @validate(format: "email", min_len: 3)\n}\n', out)
  end)

  for _, name in ipairs({ "go_reference", "go_forms" }) do
    it("writes " .. name .. ".zen in a form that compiles to the same IR", function()
      local src = assert(fs.slurp("dsl/testdata/" .. name .. ".zen"))
      local out = assert(go(src))
      assert.are.equal(ir_text(src), ir_text(out))
      assert.are.equal(out, assert(go(out)))
      assert.is_nil(out:find("format: %a"))
    end)
  end

  local rows = {
    { "a list type", "message M { xs: [string] }", "the list type [string]" },
    { "a module-qualified type", "message M { u: other.User }", "the module-qualified type other.User" },
    { "@default(true)", "message M { b: bool @default(true) }", "@default(true|false)" },
    { "@concurrently", "entity E { id: uuid @primary  index(id) @concurrently }", "@concurrently on index" },
    { "a linear backoff", "job J() { retry: backoff(linear, base: 1s) }", "backoff(linear)" },
    { "backoff's max:", "job J() { retry: backoff(exponential, base: 1s, max: 1m) }", "backoff's max:" },
    { "a service prefix", 'service S { prefix: "/v1" }', "the option prefix: in service S" },
    { "a job timeout", "job J() { timeout: 30s }", "the option timeout: in job J" },
    { "an enum value's attribute", 'enum E { a @renamed_from("b") }', "@renamed_from on enum value a" },
  }
  for _, row in ipairs(rows) do
    it("refuses " .. row[1] .. " with a diagnostic at its place", function()
      local out, err = go(row[2])
      assert.is_nil(out)
      assert.are.equal("go", err.code)
      assert.are.equal(1, #err.diagnostics)
      local d = err.diagnostics[1]
      assert.are.equal("fmt", d.phase)
      assert.matches(row[3], d.message, 1, true)
      assert.matches("not in the Go grammar", d.message, 1, true)
      -- the plain formatter still takes it
      assert.is_string((format.format(row[2], "s.zen")))
    end)
  end

  it("exits 1 and prints the diagnostics through the command, 0 on a Go-clean file", function()
    local dir = fs.tmpdir()
    fs.write(dir .. "/ok.zen", "entity U { id: uuid @primary  e: string @validate(format: email) }\n")
    fs.write(dir .. "/bad.zen", "message M { xs: [string] }\n")
    local ok = process.zever("fmt", "--go", dir .. "/ok.zen")
    assert.are.equal(0, ok.code, ok.stderr)
    assert.matches('@validate(format: "email")', ok.stdout, 1, true)
    local bad = process.zever("fmt", "--go", dir .. "/bad.zen")
    assert.are.equal(1, bad.code)
    assert.matches("bad.zen:1:17: [fmt] the list type [string]", bad.stderr, 1, true)
    fs.rm_rf(dir)
  end)
end)
