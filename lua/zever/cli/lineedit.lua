-- zever.cli.lineedit: a small line editor for `zever console` (no readline: the core binary links
-- only libc). On a terminal it puts the tty in non-canonical, no-echo mode (stty) and edits the
-- line itself; otherwise it reads plain lines. It must not be used by anything that serves.
--
--   local ed = lineedit.new{ history = path | nil, max = 1000 }
--   ed:read(prompt) -> line | nil (end of input: Ctrl-D on an empty line, or EOF)
--   ed:add(line)    -- appends to the history (and to its file)
--   ed:close()      -- restores the terminal
--
-- Keys: printable bytes insert (UTF-8 passes through byte by byte); Backspace; Delete (ESC[3~,
-- Ctrl-D on a non-empty line); Left/Right, Home/End (ESC[H/ESC[F, ESC[1~/ESC[4~, Ctrl-A/E);
-- Up/Down walk the history; Ctrl-U kills to the start, Ctrl-K to the end, Ctrl-W a word;
-- Ctrl-L clears the screen; Ctrl-C abandons the line (read returns "" and the caller goes on).

local sys = require "zever.sys"

local format, sub, byte = string.format, string.sub, string.byte

local M = {}

local Editor = {}
Editor.__index = Editor

local function sh(cmd)
  local p = io.popen(cmd)
  if not p then return nil end
  local out = p:read("*a")
  p:close()
  return (out:gsub("%s+$", ""))
end

function M.new(opts)
  opts = opts or {}
  local self = setmetatable({ history = {}, file = opts.history, max = opts.max or 1000,
    tty = sys.isatty(0) and sys.isatty(1) }, Editor)
  if self.file then
    local f = io.open(self.file, "r")
    if f then
      for line in f:lines() do self.history[#self.history + 1] = line end
      f:close()
    end
    while #self.history > self.max do table.remove(self.history, 1) end
  end
  if self.tty then
    self.saved = sh("stty -g < /dev/tty 2>/dev/null")
    os.execute("stty -icanon -echo -isig min 1 < /dev/tty 2>/dev/null")
  end
  return self
end

function Editor:close()
  if self.saved and self.saved ~= "" then
    os.execute("stty " .. self.saved .. " < /dev/tty 2>/dev/null")
    self.saved = nil
  end
end

function Editor:add(line)
  if line:match("^%s*$") or self.history[#self.history] == line then return end
  self.history[#self.history + 1] = line
  if #self.history > self.max then table.remove(self.history, 1) end
  if self.file then
    local f = io.open(self.file, "a")
    if f then
      f:write(line:gsub("\n", " "), "\n")
      f:close()
    end
  end
end

local out = io.stdout

local function redraw(prompt, buf, pos)
  out:write("\r", prompt, buf, "\27[K")
  if pos < #buf then out:write(format("\27[%dD", #buf - pos)) end
  out:flush()
end

function Editor:read(prompt)
  if not self.tty then
    out:write(prompt)
    out:flush()
    return io.stdin:read("*l")
  end
  local buf, pos = "", 0
  local hist, hpos = self.history, #self.history + 1
  local draft = ""
  out:write(prompt)
  out:flush()
  while true do
    local c = io.stdin:read(1)
    if c == nil then return nil end
    local b = byte(c)
    if c == "\r" or c == "\n" then
      out:write("\r\n")
      out:flush()
      return buf
    elseif b == 4 then                     -- Ctrl-D
      if buf == "" then
        out:write("\r\n")
        return nil
      end
      if pos < #buf then buf = sub(buf, 1, pos) .. sub(buf, pos + 2) end
    elseif b == 3 then                     -- Ctrl-C
      out:write("^C\r\n")
      out:flush()
      return ""
    elseif b == 127 or b == 8 then         -- Backspace
      if pos > 0 then
        buf = sub(buf, 1, pos - 1) .. sub(buf, pos + 1)
        pos = pos - 1
      end
    elseif b == 1 then pos = 0             -- Ctrl-A
    elseif b == 5 then pos = #buf          -- Ctrl-E
    elseif b == 11 then buf = sub(buf, 1, pos) -- Ctrl-K
    elseif b == 21 then                    -- Ctrl-U
      buf, pos = sub(buf, pos + 1), 0
    elseif b == 23 then                    -- Ctrl-W
      local head = sub(buf, 1, pos):gsub("[^%s]*%s*$", "")
      buf, pos = head .. sub(buf, pos + 1), #head
    elseif b == 12 then                    -- Ctrl-L
      out:write("\27[H\27[2J")
    elseif b == 27 then                    -- an escape sequence
      local s = io.stdin:read(1)
      if s == "[" or s == "O" then
        local seq = ""
        repeat
          local d = io.stdin:read(1)
          if not d then return nil end
          seq = seq .. d
        until d:match("[%a~]")
        if seq == "D" then
          if pos > 0 then pos = pos - 1 end
        elseif seq == "C" then
          if pos < #buf then pos = pos + 1 end
        elseif seq == "H" or seq == "1~" then pos = 0
        elseif seq == "F" or seq == "4~" then pos = #buf
        elseif seq == "3~" then
          if pos < #buf then buf = sub(buf, 1, pos) .. sub(buf, pos + 2) end
        elseif seq == "A" and hpos > 1 then
          if hpos == #hist + 1 then draft = buf end
          hpos = hpos - 1
          buf = hist[hpos]
          pos = #buf
        elseif seq == "B" and hpos <= #hist then
          hpos = hpos + 1
          buf = hpos == #hist + 1 and draft or hist[hpos]
          pos = #buf
        end
      end
    elseif b >= 32 or b == 9 then
      if b == 9 then c = "  " end
      buf = sub(buf, 1, pos) .. c .. sub(buf, pos + 1)
      pos = pos + #c
    end
    redraw(prompt, buf, pos)
  end
end

return M
