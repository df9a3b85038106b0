-- zever gen's handler stubs, through the real binary: handlers/<service>.lua and
-- handlers/jobs.lua (outside generated/) get a stub for each RPC and job without a handler;
-- what the user wrote is never changed, a second run adds nothing, and the app's routes use
-- the handlers/ file.

local process = require "spec.support.process"
local fs = require "spec.support.files"
local json = require "zever.json"
local sys = require "zever.sys"

local quote = process.quote

local function zever_in(dir, ...)
  local parts = { "cd " .. quote(dir) .. " &&", quote(sys.exe()) }
  for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
  return process.run(table.concat(parts, " "))
end

local V1 = [[
entity Note {
  id: int64 @primary
  body: string
}

service NoteService {
  rpc GetNote(id: int64) -> Note { http: GET "/notes/{id}"  auth: none }
}

job Reindex() { queue: default }
]]

local V2 = V1:gsub("\n}\n\njob", [[

  rpc CreateNote(body: string) -> Note { http: POST "/notes"  auth: none }
}

job Purge(days: int32) { queue: default }

job]])

local APP = [[
local zever = require "zever"
local app = zever.app()
require("generated.routes").register(app)
return app
]]

describe("zever gen handler stubs", function()
  local dir
  before_each(function()
    dir = fs.tmpdir({ ["schema/app.zen"] = V1, ["app.lua"] = APP })
  end)
  after_each(function() os.execute("rm -rf " .. quote(dir)) end)

  it("writes stubs outside generated/ and appends only the missing ones", function()
    local r = zever_in(dir, "gen")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("added stub handlers/note_service.lua: NoteService.GetNote\n" ..
      "added stub handlers/jobs.lua: job Reindex\n", r.stdout)

    -- The user writes the handler; the schema grows an RPC and a job.
    local path = dir .. "/handlers/note_service.lua"
    local mine = fs.read(path):gsub('  return nil, { code = "unimplemented".-\n',
      '  return { id = input.id, body = "mine" }\n', 1)
    fs.write(path, mine)
    fs.write(dir .. "/schema/app.zen", V2)
    r = zever_in(dir, "gen")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("added stub handlers/note_service.lua: NoteService.CreateNote\n" ..
      "added stub handlers/jobs.lua: job Purge\n", r.stdout)
    local now = fs.read(path)
    assert.are.equal(mine:gsub("return M\n$", ""), now:sub(1, #mine - #"return M\n"))
    assert.matches("function M.CreateNote%(input, ctx%)", now)
    assert.matches("\nreturn M\n$", now)

    -- Nothing to add: nothing printed, nothing changed.
    r = zever_in(dir, "gen")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stdout)
    assert.are.equal(now, fs.read(path))

    -- rm -rf generated loses nothing of the user's.
    os.execute("rm -rf " .. quote(dir .. "/generated"))
    r = zever_in(dir, "gen")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal(now, fs.read(path))

    -- The app's routes are the handlers/ file's, and the written one answers.
    r = zever_in(dir, "routes", "--json")
    assert.are.equal(0, r.code, r.stderr)
    for _, route in ipairs(json.decode(r.stdout)) do
      assert.matches("^" .. dir:gsub("%p", "%%%0") .. "/handlers/note_service%.lua:%d+$", route.source)
    end
    local t = require("zever.testing").app(dir)
    local res = t:get("/notes/7")
    local created = t:post("/notes", { json = { body = "x" } })
    t:close()
    assert.are.same({ id = 7, body = "mine" }, res:json())
    assert.are.equal(501, created.status)
  end)

  it("leaves a file without a final return M alone and says so", function()
    fs.write(dir .. "/handlers/note_service.lua", "return { }\n")
    local r = zever_in(dir, "gen")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("left handlers/note_service.lua: it does not end with `return M`; add GetNote",
      r.stderr, 1, true)
    assert.are.equal("return { }\n", fs.read(dir .. "/handlers/note_service.lua"))
  end)
end)
