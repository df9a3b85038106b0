-- zever test --seeds N runs each seed in a child `zever test`. A SIGTERM or SIGINT to the parent
-- (a CI timeout, ^C sent to its PID) is forwarded to the child run in progress, no further run
-- starts, and the parent exits 143 or 130. The inner spec appends its run's PID to a file and
-- waits (up to 120 s) to be stopped; the outer one runs the parent in the background.

local process = require "spec.support.process"
local files = require "spec.support.files"
local sys = require "zever.sys"

local quote = process.quote

local INNER = [[
local sys = require "zever.sys"
local process = require "spec.support.process"
describe("a run", function()
  it("waits for the signal", function()
    local f = assert(io.open(%q, "a"))
    f:write(sys.getpid(), "\n")
    f:close()
    process.wait_for(function() return false end, 120)
  end)
end)
]]

for _, case in ipairs({ { "TERM", 143 }, { "INT", 130 } }) do
  local signal, status = case[1], case[2]
  describe("zever test --seeds killed by SIG" .. signal, function()
    local dir, runner, runs

    before_each(function()
      dir = files.tmpdir(nil, "zever-seedsig")
      runs = dir .. "/runs"
      files.write(dir .. "/inner_spec.lua", INNER:format(runs))
      -- From the repository (spec.support resolves there), in the background; a subshell keeps
      -- its exit status. env gives it the default SIGINT back (a background job ignores it).
      os.execute(("(cd %s && { env --default-signal=INT %s test --seeds 2 %s >%s 2>&1 & " ..
        "echo $! >%s; wait $!; echo $? >%s; }) >/dev/null 2>&1 &"):format(quote(sys.home()),
        quote(sys.exe()), quote(dir .. "/inner_spec.lua"), quote(dir .. "/log"),
        quote(dir .. "/pid"), quote(dir .. "/status")))
      -- A whole line: the file exists (empty) from the inner spec's open until its write.
      assert(process.wait_for(function() return (files.slurp(runs) or ""):match("%d+\n") end, 90),
        "the first run did not start: " .. files.text(dir .. "/log"))
      runner = tonumber(files.read(dir .. "/pid"))
    end)

    after_each(function()
      -- Whatever a failure left running, stopped by PID.
      if runner and process.alive(runner) then process.terminate(runner, "KILL", 0) end
      for pid in (files.slurp(runs) or ""):gmatch("%d+") do
        if process.alive(tonumber(pid)) then process.terminate(tonumber(pid), "KILL", 0) end
      end
      files.rm_rf(dir)
    end)

    it("stops the run in progress, starts no other and exits " .. status, function()
      local child = tonumber(files.read(runs):match("%d+"))
      assert.is_true(process.alive(runner), "the parent is not running before the kill")
      assert.is_true(process.alive(child), "the run is not running before the kill")
      assert(os.execute("kill -" .. signal .. " " .. runner) == 0)
      assert.is_true(process.wait_for(function() return files.slurp(dir .. "/status") ~= nil end,
        30), "zever test --seeds did not exit on SIG" .. signal)
      assert.is_true(process.wait_for(function() return not process.alive(child) end, 30),
        "the run in progress outlived its parent")
      assert.are.equal(tostring(status), files.read(dir .. "/status"):match("%d+"))
      local _, n = files.read(runs):gsub("%d+", "")
      assert.are.equal(1, n, "a second run started")
      local log = files.text(dir .. "/log")
      assert.matches("SIG" .. signal .. ": stopped after 1 of 2 runs", log, 1, true)
    end)
  end)
end
