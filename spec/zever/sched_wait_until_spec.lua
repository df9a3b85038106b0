-- zever.spawn and zever.wait_until: a script drives concurrent coroutines on the loop.

local zever = require "zever"

describe("zever.wait_until", function()
  it("runs spawned coroutines until the predicate holds", function()
    local done = 0
    for i = 1, 5 do
      zever.spawn(function(n)
        zever.sleep(0.001 * n)
        done = done + 1
      end, i)
    end
    assert.is_true(zever.wait_until(function() return done == 5 end, 10))
    assert.are.equal(5, done)
  end)

  it("returns false when the timeout passes first", function()
    assert.is_false(zever.wait_until(function() return false end, 0.01))
  end)

  it("works inside a coroutine too", function()
    local flag, result = false, nil
    zever.spawn(function() result = zever.wait_until(function() return flag end, 10) end)
    zever.spawn(function() zever.sleep(0.005); flag = true end)
    assert.is_true(zever.wait_until(function() return result ~= nil end, 10))
    assert.is_true(result)
  end)

  it("raises on misuse", function()
    assert.has_error(function() zever.wait_until(1) end, "wait_until: pred must be a function")
    assert.has_error(function() zever.wait_until(print, -1) end,
      "wait_until: timeout must be a number of seconds >= 0")
  end)
end)
