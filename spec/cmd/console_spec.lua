-- zever console through a pseudo-terminal (spec/support/pty_run.py, Python's pty module): the
-- real binary, its own line editor, keys as a terminal sends them.

local process = require "spec.support.process"
local fs = require "spec.support.files"
local json = require "zever.json"
local sys = require "zever.sys"

local quote = process.quote
local PTY = sys.home() .. "/spec/support/pty_run.py"

-- Plays steps against `zever console` in dir with env; returns the transcript and exit code.
local function console(dir, env, steps)
  local parts = { "env" }
  for k, v in pairs(env) do parts[#parts + 1] = k .. "=" .. quote(v) end
  parts[#parts + 1] = process.PYTHON .. " " .. quote(PTY) .. " " .. quote(json.encode(steps)) .. " --cwd " ..
    quote(dir) .. " -- " .. quote(sys.exe()) .. " console"
  local r = process.run(table.concat(parts, " "))
  assert.are.equal(0, r.code, r.stdout .. r.stderr)
  return r.stdout, tonumber(r.stdout:match("\nEXIT (%d+)\n$"))
end

describe("zever console", function()
  local root, app, history
  before_each(function()
    root = fs.tmpdir()
    app = root .. "/shop"
    assert.are.equal(0, process.run("cd " .. quote(root) .. " && " .. quote(sys.exe()) ..
      " new shop --batteries cache").code)
    history = root .. "/history"
  end)
  after_each(function() os.execute("rm -rf " .. quote(root)) end)

  it("evaluates, continues open input, edits the line, recalls history and runs waits on the loop", function()
    local out, code = console(app, { ZEVER_HISTORY = history, NO_COLOR = "1" }, {
      { expect = "zever> " },
      { send = "1 + 1\r", expect = "2\r\nzever> " },
      { send = "function triple(a)\r", expect = "...> " },
      { send = "return a * 3\r", expect = "...> " },
      { send = "end\r", expect = "zever> " },
      -- "triple14", Left x2 and "(", End and ")": triple(14).
      { send = "triple14\27[D\27[D(\27[F)\r", expect = "42\r\nzever> " },
      -- Up recalls the last line.
      { send = "\27[A\r", expect = "42\r\nzever> " },
      { send = "zever.sleep(0.05) return 'slept'\r", expect = "\"slept\"\r\nzever> " },
      { send = "app.cache:set('k', 'v') return app.cache:get('k')\r", expect = "\"v\"\r\nzever> " },
      { send = "app.db:query(\"SELECT 1 AS n, 'a' AS s UNION ALL SELECT 2, 'b'\")\r",
        expect = "(2 rows)" },
      { send = "error('kaput')\r", expect = "kaput" },
      { send = "{ list = { 1, 2 }, name = 'x' }\r", expect = "{ list = { 1, 2 }, name = \"x\" }" },
      { send = "\4" },
    })
    assert.are.equal(0, code, out)
    assert.matches("n | s\r\n--+--\r\n1 | a\r\n2 | b\r\n(2 rows)", out, 1, true)
    local h = fs.read(history)
    assert.matches("triple(14)\n", h, 1, true)
    assert.matches("function triple(a) return a * 3 end\n", h, 1, true)
  end)

  it("warns in red before the first prompt on the production configuration", function()
    local out, code = console(app, { ZEVER_ENV = "production", ZEVER_HISTORY = history }, {
      { expect = "zever> " },
      { send = "\4" },
    })
    assert.are.equal(0, code, out)
    assert.matches("(production)", out, 1, true)
    assert.matches("\27[1;31mwarning: this is the PRODUCTION configuration", out, 1, true)
  end)

  it("reads plain lines when stdin is not a terminal", function()
    local r = process.run("cd " .. quote(app) .. " && printf 'return 6 * 7\\n' | " ..
      quote(sys.exe()) .. " console")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("zever> 42\n", r.stdout, 1, true)
  end)

  -- The app loads with the JIT off (a start-up cost); what the user types runs with it on.
  it("runs the user's input with the JIT on", function()
    local r = process.run("cd " .. quote(app) .. " && printf 'return (jit.status())\n' | " ..
      quote(sys.exe()) .. " console")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("zever> true\n", r.stdout, 1, true)
  end)
end)
