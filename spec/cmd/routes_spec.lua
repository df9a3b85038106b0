-- zever routes on an app with .zen-generated routes, through the real binary: `zever gen`
-- writes generated/routes.lua, the app registers it with its own handlers, and each generated
-- route names the app's handler file:line (not zever.rpc's wrapper), in text and in --json.

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

local SCHEMA = [[
entity Note {
  id: int64 @primary
  body: string
}

service NoteService {
  rpc GetNote(id: int64) -> Note { http: GET "/notes/{id}"  auth: none }
  rpc CreateNote(body: string) -> Note { http: POST "/notes"  auth: none }
}
]]

local HANDLERS = [[
local M = {}

function M.GetNote(input)
  return { id = input.id, body = "hello" }
end

function M.CreateNote(input)
  return { id = 1, body = input.body }
end

return { NoteService = M }
]]

local APP = [[
local zever = require "zever"
local app = zever.app()
app:get("/plain", function() return "plain" end)
require("generated.routes").register(app, require("handlers.notes"))
return app
]]

describe("zever routes", function()
  local dir
  before_each(function()
    dir = fs.tmpdir({ ["schema/app.zen"] = SCHEMA, ["handlers/notes.lua"] = HANDLERS,
      ["app.lua"] = APP })
    local r = zever_in(dir, "gen", "--backend", "routes")
    assert.are.equal(0, r.code, r.stderr)
  end)
  after_each(function() os.execute("rm -rf " .. quote(dir)) end)

  it("names the app's handler file:line for generated routes (--json)", function()
    local r = zever_in(dir, "routes", "--json")
    assert.are.equal(0, r.code, r.stderr)
    local by = {}
    for _, route in ipairs(json.decode(r.stdout)) do by[route.method .. " " .. route.pattern] = route end
    assert.are.equal(dir .. "/handlers/notes.lua:3", by["GET /notes/:id"].source)
    assert.are.equal(dir .. "/handlers/notes.lua:7", by["POST /notes"].source)
    assert.are.equal("NoteService.GetNote", by["GET /notes/:id"].name)
    assert.are.equal(dir .. "/app.lua:3", by["GET /plain"].source)
  end)

  it("prints the same in its table", function()
    local r = zever_in(dir, "routes")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("GET%s+/notes/:id%s+NoteService%.GetNote%s+" .. dir:gsub("%p", "%%%0") ..
      "/handlers/notes%.lua:3", r.stdout)
    assert.is_nil(r.stdout:find("rpc.lua", 1, true))
  end)
end)
