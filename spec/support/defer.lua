-- spec/support/defer.lua: several clean-ups for one test. busted keeps one `finally` per test:
-- a second call replaces the first (busted/init.lua: `finally = fn`), so a test that started a
-- server and then a worker, and gave each its own finally, left the server running (session
-- 13: every run of spec/deploy/bundle_spec.lua left a bundle's `serve` behind). A test with more
-- than one thing to undo registers one finally through this module and hands each clean-up to
-- the function it returns; they run last-registered first, all of them even when one raises,
-- and the first error is raised after the others ran.
--
--   local defer = require("spec.support.defer")(finally)
--   defer(function() files.rm_rf(dir) end)
--   defer(function() srv:kill() end)
--
-- spec/zever/spec_hygiene_spec.lua fails on a test that calls finally twice.
return function(finally)
  local fns = {}
  finally(function()
    local first
    for i = #fns, 1, -1 do
      local ok, err = pcall(fns[i])
      if not ok and first == nil then first = err end
    end
    if first ~= nil then error(first, 0) end
  end)
  return function(fn)
    if type(fn) ~= "function" then error("defer: a function to run at the end of the test", 2) end
    fns[#fns + 1] = fn
  end
end
