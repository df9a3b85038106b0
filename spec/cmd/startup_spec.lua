-- What keeps start-up short (issue #26): bytecode of the Lua tree found before the sources but
-- never when stale, the command index `zever --help` lists from, and the libraries only some
-- commands need loaded from lib/<binary>/<folder>.so on first require. Each describe builds its
-- own zever home in a temporary folder (ZEVER_HOME), linking the real tree's folders into it.

local files = require "spec.support.files"
local process = require "spec.support.process"
local sys = require "zever.sys"

local quote, run = process.quote, process.run

local HOME = sys.home()

-- Runs the zever binary with ZEVER_HOME=home and the given (already quoted) arguments.
local function zever_in(home, args)
  return run("ZEVER_HOME=" .. quote(home) .. " " .. quote(sys.exe()) .. " " .. args)
end

-- Waits until the clock has moved past the modification time of path, so that a file written
-- next is strictly newer (file systems keep nanoseconds; the kernel's tick is coarser).
local function after_mtime(path)
  local t = assert(sys.mtime(path))
  assert(process.wait_for(function()
    local probe = path .. ".tick"
    files.write(probe, "")
    local newer = sys.mtime(probe) > t
    os.remove(probe)
    return newer
  end, 5))
end

describe("start-up", function()
  describe("the bytecode searcher", function()
    local home, script

    before_each(function()
      home = files.tmpdir(nil, "zever-bc")
      for _, d in ipairs({ "cmd", "dsl" }) do
        assert(os.execute("ln -s " .. quote(HOME .. "/" .. d) .. " " .. quote(home .. "/" .. d)))
      end
      assert(os.execute("mkdir -p " .. quote(home .. "/lua") .. " && ln -s " ..
        quote(HOME .. "/lua/zever") .. " " .. quote(home .. "/lua/zever") .. " && ln -s " ..
        quote(HOME .. "/lua/adapters") .. " " .. quote(home .. "/lua/adapters")))
      script = files.write(home .. "/probe_main.lua", 'io.write(require("bc_probe"))')
    end)

    after_each(function() files.rm_rf(home) end)

    local function compile()
      local r = zever_in(home, "run " .. quote(HOME .. "/lua/zever/cli/bytecode.lua") ..
        " lua/bc_probe.lua")
      assert.are.equal(0, r.code, r.stderr)
    end

    it("loads the compiled copy while it is newer than the source", function()
      files.write(home .. "/lua/bc_probe.lua", 'return "compiled"')
      compile()
      -- The source changes under the compiled copy, which keeps its later mtime: the searcher
      -- still picks the copy (this is how a build is used), proving it is read at all.
      local bc = home .. "/build/bc/lua/bc_probe.lua"
      assert.is_truthy(files.read(bc):sub(1, 3) == "\27LJ")
      local t = sys.mtime(bc)
      files.write(home .. "/lua/bc_probe.lua", 'return "source"')
      assert(os.execute("touch -d @" .. ("%.0f"):format(t - 60) .. " " ..
        quote(home .. "/lua/bc_probe.lua")))
      local r = zever_in(home, "run " .. quote(script))
      assert.are.equal(0, r.code, r.stderr)
      assert.are.equal("compiled", r.stdout)
    end)

    it("never uses a compiled copy older than its source", function()
      files.write(home .. "/lua/bc_probe.lua", 'return "old"')
      compile()
      after_mtime(home .. "/build/bc/lua/bc_probe.lua")
      files.write(home .. "/lua/bc_probe.lua", 'return "new"')
      local r = zever_in(home, "run " .. quote(script))
      assert.are.equal(0, r.code, r.stderr)
      assert.are.equal("new", r.stdout)
    end)

    it("keeps the source's name in tracebacks of compiled code", function()
      files.write(home .. "/lua/bc_probe.lua", '\n\nerror("boom")')
      compile()
      local r = zever_in(home, "run " .. quote(script))
      assert.are.equal(1, r.code)
      assert.is_truthy(r.stderr:find(home .. "/lua/bc_probe.lua:3: boom", 1, true), r.stderr)
    end)

    it("reports a source that does not compile, and writes nothing", function()
      files.write(home .. "/lua/bc_probe.lua", 'return (')
      local r = zever_in(home, "run " .. quote(HOME .. "/lua/zever/cli/bytecode.lua") ..
        " lua/bc_probe.lua")
      assert.are_not.equal(0, r.code)
      assert.is_truthy(r.stderr:find("bc_probe.lua:1:", 1, true), r.stderr)
      assert.is_nil(files.slurp(home .. "/build/bc/lua/bc_probe.lua"))
    end)
  end)

  describe("the command index", function()
    local home

    before_each(function()
      home = files.tmpdir(nil, "zever-index")
      for _, d in ipairs({ "lua", "dsl" }) do
        assert(os.execute("ln -s " .. quote(HOME .. "/" .. d) .. " " .. quote(home .. "/" .. d)))
      end
      assert(os.execute("mkdir -p " .. quote(home .. "/cmd/zever") .. " " ..
        quote(home .. "/build") .. " && cp " .. quote(HOME) .. "/cmd/zever/*.lua " ..
        quote(home .. "/cmd/zever/")))
    end)

    after_each(function() files.rm_rf(home) end)

    local function write_index()
      local r = zever_in(home, "run " .. quote(HOME .. "/lua/zever/cli/index.lua") .. " " ..
        quote(home .. "/build/commands.lua"))
      assert.are.equal(0, r.code, r.stderr)
    end

    it("lists from the index while it is up to date", function()
      write_index()
      -- An index entry that differs from the command's file shows that help read the index.
      local index = files.read(home .. "/build/commands.lua")
      local edited = index:gsub('%["version"%] = "[^"]*"', '["version"] = "from the index"')
      assert.are_not.equal(index, edited)
      after_mtime(home .. "/cmd/zever/version.lua")
      files.write(home .. "/build/commands.lua", edited)
      local r = zever_in(home, "--help")
      assert.are.equal(0, r.code, r.stderr)
      assert.is_truthy(r.stdout:find("version +from the index"), r.stdout)
    end)

    it("ignores an index older than a command file", function()
      write_index()
      after_mtime(home .. "/build/commands.lua")
      local v = files.read(home .. "/cmd/zever/version.lua")
      files.write(home .. "/cmd/zever/version.lua",
        (v:gsub('summary = "[^"]*"', 'summary = "a changed summary"', 1)))
      local r = zever_in(home, "--help")
      assert.are.equal(0, r.code, r.stderr)
      assert.is_truthy(r.stdout:find("version +a changed summary"), r.stdout)
    end)

    it("ignores an index that misses a command", function()
      write_index()
      after_mtime(home .. "/build/commands.lua")
      files.write(home .. "/build/commands.lua", 'return { version = "x" }')
      local r = zever_in(home, "--help")
      assert.are.equal(0, r.code, r.stderr)
      assert.is_truthy(r.stdout:find("  serve +"), r.stdout)
    end)

    it("lists a command added or removed after the index was written (the folder's mtime)", function()
      write_index()
      local index = files.read(home .. "/build/commands.lua")
      after_mtime(home .. "/cmd/zever")
      local v = files.read(home .. "/cmd/zever/version.lua")
      files.write(home .. "/cmd/zever/hello.lua", (v:gsub('name = "version"', 'name = "hello"', 1)
        :gsub('summary = "[^"]*"', 'summary = "a new command"', 1)))
      local r = zever_in(home, "--help")
      assert.are.equal(0, r.code, r.stderr)
      assert.is_truthy(r.stdout:find("hello +a new command"), r.stdout)
      r = zever_in(home, "helo")
      assert.are.equal(2, r.code)
      assert.matches('Did you mean "hello"?', r.stderr, 1, true)
      -- Removed again: the folder changed, so the index is checked against the listing.
      os.remove(home .. "/cmd/zever/hello.lua")
      os.remove(home .. "/cmd/zever/fmt.lua")
      r = zever_in(home, "--help")
      assert.is_nil(r.stdout:find("  fmt ", 1, true), r.stdout)
      assert.is_nil(r.stdout:find("  hello ", 1, true), r.stdout)
      assert.is_truthy(index:find('["fmt"]', 1, true))
    end)

    it("reads the index's bytecode only while it is newer than its source", function()
      write_index()
      local luac = files.read(home .. "/build/commands.luac")
      assert.are.equal("\27LJ", luac:sub(1, 3))
      -- The source edited after: the bytecode (which still says the old summary) is not used.
      local index = files.read(home .. "/build/commands.lua")
      after_mtime(home .. "/build/commands.luac")
      files.write(home .. "/build/commands.lua",
        (index:gsub('%["version"%] = "[^"]*"', '["version"] = "edited source"')))
      local r = zever_in(home, "--help")
      assert.is_truthy(r.stdout:find("version +edited source"), r.stdout)
    end)

    it("renders the same bytes for the same commands", function()
      local index = require "zever.cli.index"
      local a = index.render({ b = "two", a = "one", ["x-y"] = 'quote " and \\ back' })
      assert.are.equal(a, index.render({ ["x-y"] = 'quote " and \\ back', a = "one", b = "two" }))
      assert.are.same({ a = "one", b = "two", ["x-y"] = 'quote " and \\ back' },
        assert(loadstring(a))())
    end)
  end)

  -- How the process ends (host/runtime/exit.c): exit() without lua_close while nothing loaded
  -- has a finalizer that matters; the full close as soon as something has.
  describe("the end of the process", function()
    local dir
    -- An AddressSanitizer build (make asan: bin/zever-asan) always closes, for its leak check.
    local ASAN = sys.exe():match("%-asan$") ~= nil

    before_each(function() dir = files.tmpdir(nil, "zever-exit") end)
    after_each(function() files.rm_rf(dir) end)

    -- Runs a script with `zever run` (extra: arguments after the script, already quoted).
    local function script(body, extra)
      local path = files.write(dir .. "/" .. files.unique("s") .. ".lua", body)
      return run(quote(sys.exe()) .. " run " .. quote(path) .. (extra or ""))
    end

    -- Runs the script fmt:format(...) (paths go in as %q), checks that it exited 0 and returns
    -- its result: what it wrote is read by the caller.
    local function script_ok(fmt, ...)
      local r = script(fmt:format(...))
      assert.are.equal(0, r.code, r.stderr)
      return r
    end

    -- The rows {name, script body, closes} below print sys.exit_closes() last.
    local CASES = {
      { "a script that only computes and writes files", 'local f = io.open(os.tmpname(), "w")', false },
      { "a memory-only C module (zever.json)", 'require("zever.json").encode({ 1 })', false },
      { "the ffi module without a finalizer", 'local ffi = require "ffi"; ffi.new("int[4]")', false },
      { "zever.sqlite (a database to checkpoint and close)", 'require "zever.sqlite"', true },
      { "an event loop (handles to close)", 'require "zever.loop"', true },
      { "a worker pool (threads to join)", 'require "zever.threads"', true },
      { "io.popen (a child to wait for)", 'io.popen("true"):close()', true },
      { "ffi.gc with a finalizer", 'local ffi = require "ffi"; ffi.gc(ffi.new("int[1]"), function() end)', true },
      { "newproxy (a userdata with the script's own __gc)", "newproxy(true)", true },
    }
    for _, case in ipairs(CASES) do
      it(("%s the state after %s"):format(case[3] and "closes" or "does not close", case[1]), function()
        local r = script(case[2] .. '\nio.write(tostring(require("zever.sys").exit_closes()))')
        assert.are.equal(0, r.code, r.stderr)
        assert.are.equal(tostring(case[3] or ASAN), r.stdout)
      end)
    end

    it("runs the command with the collector on (start-up ran with it stopped)", function()
      local r = script_ok([[
        local before, slot = collectgarbage("count"), {}
        for _ = 1, 20000 do slot[1] = { {}, {} } end -- stored: the JIT cannot sink them
        io.write(tostring(collectgarbage("isrunning")), " ",
          tostring(collectgarbage("count") < before + 20000 * 0.1))
      ]])
      -- 20000 x 3 tables (~2.5 MB) leave less than 2 MB behind only if cycles ran.
      assert.are.equal("true true", r.stdout)
    end)

    it("closes the state when ZEVER_LUA_CLOSE=1 asks for it", function()
      local path = files.write(dir .. "/forced.lua", 'io.write(tostring(require("zever.sys").exit_closes()))')
      local r = run("ZEVER_LUA_CLOSE=1 " .. quote(sys.exe()) .. " run " .. quote(path))
      assert.are.equal(0, r.code, r.stderr)
      assert.are.equal("true", r.stdout)
    end)

    it("leaves a file written and never closed or flushed complete, and stdout too", function()
      -- 1 MiB + 1 byte through io's buffer, then the last line without a newline: exit()
      -- must flush both streams, as lua_close would have.
      local out = dir .. "/out.txt"
      local r = script_ok([[
        local f = assert(io.open(%q, "w"))
        f:write(string.rep("x", 1048576), "\n", "last line")
        io.stdout:setvbuf("full")
        io.write(string.rep("y", 70000), "end")
        assert(require("zever.sys").exit_closes() == %s, "this run must take the fast exit")
      ]], out, tostring(ASAN))
      assert.are.equal(string.rep("y", 70000) .. "end", r.stdout)
      assert.are.equal(string.rep("x", 1048576) .. "\nlast line", files.read(out))
    end)

    it("keeps the exit code of the command when it exits without closing", function()
      local r = script(('assert(require("zever.sys").exit_closes() == %s); error("boom")')
        :format(tostring(ASAN)))
      assert.are.equal(1, r.code)
      assert.is_truthy(r.stderr:find("boom", 1, true), r.stderr)
    end)

    it("closes a SQLite database left open: its WAL is checkpointed and removed", function()
      local db = dir .. "/app.db"
      script_ok([[
        local sqlite = require "zever.sqlite"
        local c = assert(sqlite.open(%q))
        assert(c:exec("create table t (v text)"))
        assert(c:exec("insert into t values ('kept')"))
        assert(require("zever.sys").exit_closes())
      ]], db)
      -- sqlite3_close of the last connection checkpoints the WAL into the database and deletes
      -- the -wal and -shm files: only a close (the __gc) does that.
      assert.is_nil(io.open(db .. "-wal", "r"), "the -wal file is left: the database was not closed")
      assert.is_nil(io.open(db .. "-shm", "r"))
      local check = script_ok([[
        local c = assert(require("zever.sqlite").open(%q))
        io.write(assert(c:first("select v from t")).v)
        c:close()
      ]], db)
      assert.are.equal("kept", check.stdout)
    end)

    it("waits for an io.popen child that was never closed", function()
      local out = dir .. "/child.txt"
      script_ok([[
        local p = io.popen("cat > %s", "w")
        p:write("through the child\n")
      ]], out)
      -- pclose (the file's __gc) waited for cat, which had written everything before exiting.
      assert.are.equal("through the child\n", files.read(out))
    end)
  end)

  describe("lazy libraries", function()
    it("keeps libpq, OpenSSL, SQLite and hiredis out of the binary", function()
      local ldd = process.output("ldd " .. quote(sys.exe()))
      assert.is_truthy(ldd:find("libc.so", 1, true), ldd)
      for _, lib in ipairs({ "libssl", "libcrypto", "libsqlite3", "libhiredis", "libpq" }) do
        assert.is_nil(ldd:find(lib, 1, true), lib .. " is linked: " .. ldd)
      end
    end)

    it("loads a lazy module's library on first require", function()
      local dir = files.tmpdir(nil, "zever-lazy")
      local r = run(quote(sys.exe()) .. " run " .. quote(files.write(dir .. "/lazy.lua", [[
          local db = require("zever.db").open("sqlite::memory:")
          io.write(db:first("select sqlite_version() as v").v)
        ]])))
      files.rm_rf(dir)
      assert.are.equal(0, r.code, r.stderr)
      assert.is_truthy(r.stdout:match("^3%.%d+"), r.stdout)
    end)

    it("names the missing shared object when a lazy module cannot load", function()
      local dir = files.tmpdir(nil, "zever-nolib")
      assert(os.execute("mkdir -p " .. quote(dir .. "/bin") .. " && cp " .. quote(sys.exe()) ..
        " " .. quote(dir .. "/bin/zever")))
      local script = files.write(dir .. "/s.lua", 'require "zever.sqlite"')
      local r = run("ZEVER_HOME=" .. quote(HOME) .. " " .. quote(dir .. "/bin/zever") .. " run " ..
        quote(script))
      files.rm_rf(dir)
      assert.are.equal(1, r.code)
      assert.is_truthy(r.stderr:find("cannot load " .. dir .. "/bin/../lib/zever/sqlite.so", 1,
        true), r.stderr)
    end)
  end)
end)
