-- zever completion: the scripts come from the command files (every command and flag is there),
-- bash, zsh and fish parse them (-n, --no-execute), a real interactive bash and zsh on a
-- pseudo-terminal (spec/support/pty_run.py) complete commands, sub-commands, flags, battery
-- names and the app's Service.Rpc names when TAB is pressed, and fish answers `complete -C`.

local process = require "spec.support.process"
local fs = require "spec.support.files"
local json = require "zever.json"
local sys = require "zever.sys"
local dispatch = require "cmd.zever"

local quote = process.quote
local PTY = sys.home() .. "/spec/support/pty_run.py"

local function has(prog)
  return process.run("command -v " .. prog).code == 0
end

describe("zever completion", function()
  local dir
  before_each(function() dir = fs.tmpdir() end)
  after_each(function() os.execute("rm -rf " .. quote(dir)) end)

  it("names every command and every flag of every command in each shell's script", function()
    for _, shell in ipairs({ "bash", "zsh", "fish" }) do
      local r = process.zever("completion", shell)
      assert.are.equal(0, r.code, r.stderr)
      for _, name in ipairs(dispatch.names()) do
        assert.matches(name, r.stdout, 1, true)
        for _, f in ipairs(dispatch.load(name).flags or {}) do
          assert.matches(f.name, r.stdout, 1, true)
        end
      end
    end
    local r = process.zever("completion", "fis")
    assert.are.equal(2, r.code)
    assert.matches('did you mean "fish"?', r.stderr, 1, true)
  end)

  -- Each shell parses its script without running it (zsh and fish come with `make deps`).
  it("writes scripts bash -n, zsh -n and fish --no-execute accept", function()
    for _, shell in ipairs({ "bash", "zsh", "fish" }) do
      assert.is_true(has(shell), shell .. " is not installed: make deps installs it")
      local path = dir .. "/zever." .. shell
      fs.write(path, process.zever("completion", shell).stdout)
      local r = process.run(shell .. (shell == "fish" and " --no-execute " or " -n ") .. quote(path))
      assert.are.equal(0, r.code, shell .. ": " .. r.stdout .. r.stderr)
      -- The check can fail: the same script with a block left open does not parse.
      fs.write(path, fs.read(path) .. (shell == "fish" and "begin\n" or "if true; then\n"))
      local cut = process.run(shell .. (shell == "fish" and " --no-execute " or " -n ") .. quote(path))
      assert.are_not.equal(0, cut.code, shell .. " accepted an open block")
    end
  end)

  it("completes in an interactive bash through a pty", function()
    local script = dir .. "/zever.bash"
    fs.write(script, process.zever("completion", "bash").stdout)
    fs.write(dir .. "/schema/app.zen", [[
entity Note {
  id: int64 @primary
}
service NoteService {
  rpc GetNote(id: int64) -> Note { http: GET "/notes/{id}"  auth: none }
  rpc ListNotes() { http: GET "/notes"  auth: none }
}
]])
    local bin = sys.exe():match("^(.*)/[^/]*$")
    local steps = {
      { send = "PS1='$ '; bind 'set bell-style none'; source " .. script .. "\r", expect = "$ " },
      { send = "zever mig\t", expect = "zever migrate " },
      { send = "\21" },
      { send = "zever generate ent\t", expect = "zever generate entity " },
      { send = "\21" },
      { send = "zever new x --batt\t", expect = "--batteries " },
      { send = "\21" },
      { send = "zever add cach\t", expect = "zever add cache" },
      { send = "\21" },
      { send = "zever explain NoteService.G\t", expect = "NoteService.GetNote " },
      { send = "\21" },
      { send = "zever completion fi\t", expect = "completion fish " },
      { send = "\21exit\r" },
    }
    local r = process.run("env PATH=" .. quote(bin .. ":" .. os.getenv("PATH")) .. " " .. process.PYTHON .. " " ..
      quote(PTY) .. " " .. quote(json.encode(steps)) .. " --cwd " .. quote(dir) ..
      " -- bash --norc --noprofile -i")
    assert.are.equal(0, r.code, r.stdout .. r.stderr)
    assert.matches("\nEXIT 0\n$", r.stdout)
  end)

  it("completes in an interactive zsh through a pty (zsh's bash completion layer)", function()
    local script = dir .. "/zever.zsh"
    fs.write(script, process.zever("completion", "zsh").stdout)
    local bin = sys.exe():match("^(.*)/[^/]*$")
    -- zsh's line editor redraws in place: the completed word is followed by escape sequences,
    -- so each expect names the word without the space after it.
    local steps = {
      { send = "PS1='$ '; source " .. script .. "\r", expect = "$ " },
      { send = "zever mig\t", expect = "zever migrate" },
      { send = "\21" },
      { send = "zever new x --batt\t", expect = "--batteries" },
      { send = "\21" },
      { send = "zever completion fi\t", expect = "completion fish" },
      { send = "\21exit\r" },
    }
    local r = process.run("env PATH=" .. quote(bin .. ":" .. os.getenv("PATH")) .. " python3 " ..
      quote(PTY) .. " " .. quote(json.encode(steps)) .. " --cwd " .. quote(dir) .. " -- zsh -f -i")
    assert.are.equal(0, r.code, r.stdout .. r.stderr)
    assert.matches("\nEXIT 0\n$", r.stdout)
  end)

  it("answers fish's completion queries (complete -C)", function()
    local script = dir .. "/zever.fish"
    fs.write(script, process.zever("completion", "fish").stdout)
    local bin = sys.exe():match("^(.*)/[^/]*$")
    local r = process.run("env PATH=" .. quote(bin .. ":" .. os.getenv("PATH")) ..
      " fish --no-config -c " .. quote("source " .. script .. "; complete -C 'zever mig';" ..
      " complete -C 'zever new x --batt'; complete -C 'zever add cach'"))
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("^migrate\t", r.stdout)
    assert.matches("\n%-%-batteries\t", r.stdout)
    assert.matches("\ncache/redis\n", r.stdout)
  end)
end)
