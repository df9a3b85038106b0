-- Docs that run: every ```lua and ```sh block of README.md and docs/*.md is either executed here
-- or marked as a fragment by the line `<!-- fragment -->` right before its fence.
--
--   a Lua app (it makes zever.app() and ends with `return app`): loaded with zever.testing in a
--     folder of its own (its own database, the test environment) and one route is requested
--     in-process; any answer but a 5xx passes
--   any other Lua block: a script, run by `zever run` in an empty temporary folder; exit 0 passes
--   a sh block: run by `sh -e` in an empty temporary folder with bin/zever first on PATH (as
--     `zever`); exit 0 passes
--
-- A block that is not complete (it uses names defined elsewhere, needs a server, shows an
-- excerpt) gets the marker; an unmarked block that does not run fails here, with its file and
-- line, so the docs cannot drift from the code. A block that shows a file of the repository
-- (docs/testing.md shows examples/bookmarks) has `<!-- file: path -->` before its fence
-- instead, and must equal that file, which its own spec runs.

local process = require "spec.support.process"
local fs = require "spec.support.files"
local sys = require "zever.sys"

local HOME = sys.home()
local MARKER = "<!-- fragment -->"

-- The blocks of one Markdown file: { file, line, lang, code, fragment, shows }.
local function blocks(rel)
  local out, cur, prev = {}, nil, ""
  local n = 0
  for line in (fs.read(HOME .. "/" .. rel) .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if cur then
      if line:match("^```%s*$") then
        cur.code = table.concat(cur.lines, "\n") .. "\n"
        out[#out + 1] = cur
        cur = nil
      else
        cur.lines[#cur.lines + 1] = line
      end
    else
      local lang = line:match("^```(%w*)%s*$")
      if lang then
        cur = { file = rel, line = n, lang = lang, lines = {}, fragment = prev:match("^%s*" ..
          MARKER:gsub("%p", "%%%0") .. "%s*$") ~= nil,
          shows = prev:match("^%s*<!%-%- file: (%S+) %-%->%s*$") }
      end
      prev = line
    end
  end
  assert(cur == nil, rel .. ": a code block is not closed")
  return out
end

local function files()
  local list = { "README.md" }
  local names = assert(sys.listdir(HOME .. "/docs"))
  table.sort(names)
  for _, name in ipairs(names) do
    if name:match("%.md$") then list[#list + 1] = "docs/" .. name end
  end
  return list
end

local function is_app(code)
  return code:find("zever.app()", 1, true) ~= nil and code:match("\nreturn app%s*$") ~= nil
end

-- The path to request: the first GET route without parameters, else the first route with its
-- parameters filled in.
local function target(app)
  local routes = app:list_routes()
  for _, r in ipairs(routes) do
    if r.method == "GET" and not r.pattern:find("[:*]") then return "GET", r.pattern end
  end
  local r = routes[1]
  if not r then return nil end
  return r.method, (r.pattern:gsub(":[%w_]+", "1"):gsub("%*[%w_]*", "x"))
end

local function run_app(b)
  local testing = require "zever.testing"
  local dir = fs.tmpdir({ ["app.lua"] = b.code }, "zever-doc-app")
  local ok, err = pcall(function()
    local t = testing.app(dir)
    local method, path = target(t.app)
    assert(method, "the app has no route")
    local res = t:request(method, path)
    t:close()
    assert(res.status < 500, method .. " " .. path .. " answered " .. res.status .. ": " .. res.body)
  end)
  fs.rm_rf(dir)
  return ok, err
end

local function run_command(b, cmd)
  local dir = fs.tmpdir({ ["block"] = b.code }, "zever-doc-run")
  local bin = fs.tmpdir({}, "zever-doc-bin")
  os.execute("ln -s " .. process.quote(sys.exe()) .. " " .. process.quote(bin .. "/zever"))
  local r = process.run("cd " .. process.quote(dir) .. " && PATH=" .. process.quote(bin) ..
    ":$PATH timeout 60 " .. cmd .. " </dev/null")
  fs.rm_rf(dir)
  fs.rm_rf(bin)
  if r.code == 0 then return true end
  return false, ("exit %d\n%s%s"):format(r.code, r.stdout, r.stderr)
end

describe("docs", function()
  local all = {}
  for _, rel in ipairs(files()) do
    for _, b in ipairs(blocks(rel)) do all[#all + 1] = b end
  end

  it("have code blocks to check", function()
    local n = 0
    for _, b in ipairs(all) do if b.lang == "lua" or b.lang == "sh" then n = n + 1 end end
    assert.is_true(n > 20, "found " .. n .. " lua/sh blocks")
  end)

  for _, b in ipairs(all) do
    if b.shows then
      it(("%s:%d: shows %s as it is"):format(b.file, b.line, b.shows), function()
        assert.are.equal(fs.read(HOME .. "/" .. b.shows), b.code)
      end)
    elseif (b.lang == "lua" or b.lang == "sh") and not b.fragment then
      local kind = b.lang == "sh" and "commands" or is_app(b.code) and "app" or "script"
      it(("%s:%d: the %s runs"):format(b.file, b.line, kind), function()
        local ok, err
        if kind == "app" then
          ok, err = run_app(b)
        elseif kind == "script" then
          ok, err = run_command(b, process.quote(sys.exe()) .. " run block")
        else
          ok, err = run_command(b, "sh -e block")
        end
        assert(ok, ("%s:%d: this %s block does not run (mark it %s if it is not complete): %s")
          :format(b.file, b.line, b.lang, MARKER, tostring(err)))
      end)
    end
  end
end)
