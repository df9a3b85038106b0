-- zever.cli.progress: the one progress bar of the CLI (migrations, search reindex, gen on a big
-- schema, bulk jobs retry). It draws one line on stderr, redrawn in place, only when stderr is
-- a terminal: piped or redirected, every call does nothing, so stdout and logs stay clean. The
-- filled part is green unless NO_COLOR is set (https://no-color.org). It redraws at most once
-- per percent (and when the label changes), and finish() clears the line, so what the command
-- prints next starts on a clean line.
--
--   local bar = progress.new("migrate up", total)   -- total: number of steps (0: nothing to do)
--   bar:step([label])            one step done; label: what runs now (a migration's name)
--   bar:set(done[, label])       done steps so far
--   bar:finish()                 clears the line
--   bar.active                   true when it draws (stderr is a terminal)
--
-- progress.new(label, total, { fd = 2, width = 30, force = nil }): force = true draws whatever
-- fd is (specs), false never draws.

local sys = require "zever.sys"

local format, rep, floor, min = string.format, string.rep, math.floor, math.min

local M = {}

local Bar = {}
Bar.__index = Bar

local function out(fd)
  return fd == 1 and io.stdout or io.stderr
end

function M.new(label, total, opts)
  opts = opts or {}
  if type(label) ~= "string" then error("progress.new: label must be a string", 2) end
  if type(total) ~= "number" or total < 0 then error("progress.new: total must be a number >= 0", 2) end
  local fd = opts.fd or 2
  local active = opts.force
  if active == nil then active = sys.isatty(fd) end
  return setmetatable({ label = label, total = total, done = 0, fd = fd, active = active,
    width = opts.width or 30, color = active and (os.getenv("NO_COLOR") or "") == "",
    last = -1, last_item = nil, drawn = false }, Bar)
end

function Bar:draw(item)
  if not self.active then return end
  local total = self.total
  local pct = total > 0 and floor(min(self.done, total) * 100 / total) or 100
  if pct == self.last and item == self.last_item then return end
  self.last, self.last_item = pct, item
  local fill = floor(pct * self.width / 100)
  local bar = rep("#", fill)
  if self.color and fill > 0 then bar = "\27[32m" .. bar .. "\27[0m" end
  local f = out(self.fd)
  f:write(format("\r\27[K%s [%s%s] %3d%% %d/%d%s", self.label, bar, rep(".", self.width - fill),
    pct, self.done, total, item and ("  " .. item) or ""))
  f:flush()
  self.drawn = true
end

function Bar:set(done, item)
  self.done = done
  self:draw(item)
end

function Bar:step(item)
  self:set(self.done + 1, item)
end

function Bar:finish()
  if self.active and self.drawn then
    local f = out(self.fd)
    f:write("\r\27[K")
    f:flush()
  end
  self.drawn = false
end

return M
