-- zever completion: the scripts come from the command files (every command and flag is there),
-- bash and zsh accept them (-n), and a real interactive bash on a pseudo-terminal
-- (spec/support/pty_run.py) completes commands, sub-commands, flags, battery names and the
-- app's Service.Rpc names when TAB is pressed.

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

  it("writes scripts bash -n (and zsh -n, where zsh is installed) accept", function()
    for _, shell in ipairs({ "bash", "zsh" }) do
      local path = dir .. "/zever." .. shell
      fs.write(path, process.zever("completion", shell).stdout)
      if shell == "bash" or has("zsh") then
        local r = process.run(shell .. " -n " .. quote(path))
        assert.are.equal(0, r.code, shell .. ": " .. r.stderr)
      end
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
end)
