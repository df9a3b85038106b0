-- zever.app route options: app:get(pattern, handler, { timeout = seconds }).

local zever = require "zever"

describe("zever.app route options", function()
  it("keeps a route's timeout, with or without a name", function()
    local app = zever.app()
    app:get("/a", function() end, { timeout = 2 })
    app:get("b", "/b", function() end, { timeout = 0 })
    app:route({ "GET", "POST" }, "/c", function() end, { timeout = 0.5 })
    app:get("/d", function() end)
    local by = {}
    for _, r in pairs(app.routes) do by[r.method .. " " .. r.pattern] = r.timeout end
    assert.same({ ["GET /a"] = 2, ["GET /b"] = 0, ["GET /c"] = 0.5, ["POST /c"] = 0.5 }, by)
  end)

  it("raises for an unknown option or a bad timeout", function()
    local app = zever.app()
    local rows = {
      { { timeot = 1 }, "unknown route option timeot" },
      { { timeout = -1 }, "route option timeout must be a number of seconds >= 0" },
      { { timeout = "1s" }, "route option timeout must be a number of seconds >= 0" },
      { { timeout = 0 / 0 }, "route option timeout must be a number of seconds >= 0" },
    }
    for _, row in ipairs(rows) do
      local ok, err = pcall(function() app:get("/x", function() end, row[1]) end)
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find(row[2], 1, true), err)
    end
  end)
end)
