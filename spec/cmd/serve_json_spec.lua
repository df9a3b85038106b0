-- zever serve, JSON and database errors on the wire: the real binary, one worker, curl.
-- Exact integers and empty arrays through req:json, res:json, the cache and the db; strict
-- decoding answered with 400 by the handler; a database error answered with 500, the error in
-- the log and not in the body.

local process = require "spec.support.process"
local sys = require "zever.sys"

local quote = process.quote

local APP = [[
local zever = require "zever"
local app = zever.app()
local ready
local function db()
  if not ready then
    app.db:exec("CREATE TABLE IF NOT EXISTS things (id INTEGER PRIMARY KEY, name TEXT)")
    ready = true
  end
  return app.db
end
app:post("/echo", function(req, res)
  local v, err = req:json()
  if v == nil then return res:status(400):json({ error = "invalid_json", detail = tostring(err) }) end
  return res:json(v)
end)
app:get("/things", function() return { things = db():from("things"):all() } end)
app:get("/big", function() return db():first("SELECT 9007199254740993 AS id") end)
app:post("/cache", function(req)
  app.cache:set("k", req:json(), 60)
  return app.cache:get("k")
end)
app:get("/missing/:id", function(req, res)
  local row = db():from("nope"):where("id", tonumber(req.params.id)):first()
  if not row then return res:status(404):json({ error = "not_found" }) end
  return row
end)
return app
]]

local function read(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("*a")
  f:close()
  return s
end

local alive = process.alive

describe("zever serve with JSON bodies and a database", function()
  local dir, pid, port, log

  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. quote(dir)) == 0)
    local f = assert(io.open(dir .. "/app.lua", "w"))
    f:write(APP)
    f:close()
    log = dir .. "/log"
    local p = io.popen("cd " .. quote(dir) .. " && " .. quote(sys.exe()) .. " serve app.lua --listen 127.0.0.1:0 --workers 1 >" ..
      quote(log) .. " 2>&1 & echo $!")
    pid = tonumber(p:read("*l"))
    p:close()
    for _ = 1, 500 do
      port = read(log):match("on http://127%.0%.0%.1:(%d+)")
      if port then break end
      process.sleep(0.01)
    end
    assert(port, "the server did not start: " .. read(log))
  end)

  teardown(function()
    if pid and alive(pid) then
      os.execute("kill -TERM " .. pid)
      for _ = 1, 500 do
        if not alive(pid) then break end
        process.sleep(0.01)
      end
      if alive(pid) then os.execute("kill -KILL " .. pid) end
    end
    os.execute("rm -rf " .. quote(dir))
  end)

  -- { status, body } of one request; body is sent with POST when given.
  local function call(path, body)
    local args = "curl -s -S --max-time 10 -o - -w '\\n%{http_code}' "
    if body then args = args .. "-H 'Content-Type: application/json' --data-binary " .. quote(body) .. " " end
    local r = process.run(args .. quote("http://127.0.0.1:" .. port .. path))
    local text, status = r.stdout:match("^(.*)\n(%d+)$")
    return tonumber(status), text
  end

  it("round-trips 2^53 - 1 and empty arrays and objects through req:json and res:json", function()
    local status, body = call("/echo", '{"id":9007199254740991}')
    assert.are.equal(200, status)
    assert.are.equal('{"id":9007199254740991}', body)
    status, body = call("/echo", '{"a":[]}')
    assert.are.equal(200, status)
    assert.are.equal('{"a":[]}', body)
    status, body = call("/echo", "[[],{},[{}]]")
    assert.are.equal(200, status)
    assert.are.equal("[[],{},[{}]]", body)
    status, body = call("/echo", "[9223372036854775807,-9223372036854775808]")
    assert.are.equal(200, status)
    assert.are.equal("[9223372036854775807,-9223372036854775808]", body)
  end)

  for _, bad in ipairs { "[NaN]", "[Infinity]", "[0x42]", "[012]", "[-01]", "[+1]", "[1.]", "[.5]",
    '["a\tb"]', "[1] x", "[1e999]" } do
    it("answers 400 for " .. bad, function()
      local status, body = call("/echo", bad)
      assert.are.equal(400, status)
      assert.truthy(body:find('"error":"invalid_json"', 1, true))
    end)
  end

  it("writes an int64 column beyond 2^53 as a JSON integer", function()
    local status, body = call("/big")
    assert.are.equal(200, status)
    assert.are.equal('{"id":9007199254740993}', body)
  end)

  it("writes a query with no rows as []", function()
    local status, body = call("/things")
    assert.are.equal(200, status)
    assert.are.equal('{"things":[]}', body)
  end)

  it("keeps integers and empty arrays exact through the cache", function()
    local status, body = call("/cache", '{"a":[]}')
    assert.are.equal(200, status)
    assert.are.equal('{"a":[]}', body)
    status, body = call("/cache", "[9007199254740991]")
    assert.are.equal(200, status)
    assert.are.equal("[9007199254740991]", body)
  end)

  it("answers 500 for a database error, never 404, and logs the error but does not send it", function()
    local status, body = call("/missing/7")
    assert.are.equal(500, status)
    assert.are.equal('{"error":"internal"}', body)
    local text = read(log)
    assert.truthy(text:find("no such table: nope", 1, true), text)
    assert.truthy(text:find("db: schema", 1, true), text)
    -- The log says where: the traceback of the raise, down to the handler's line in app.lua.
    assert.truthy(text:find("stack traceback", 1, true), text)
    assert.truthy(text:find("app.lua:%d+"), text)
    assert.is_nil(body:find("nope", 1, true))
  end)
end)
