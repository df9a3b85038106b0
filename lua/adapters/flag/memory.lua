-- adapters.flag.memory: flags held in the Lua state, set by the program (specs, an app that
-- computes its flags, a console session). The same rules as the file adapter (adapters.flag.rules).
--
--   local impl = memory.new{ flags = { beta = true, checkout = { rollout = 25 } } }
--   impl.flags                    the compiled flags (zever.flag reads them)
--   impl:set(tree)                -> true | nil, message   replaces every flag at once
--   impl:stats()                  -> { flags }
--   memory.open(section)          -> impl (the adapter contract; section.flags when present)
--
-- A tree that does not compile raises in new (a programmer's table) and is refused by set with
-- the flags unchanged.

local rules = require "adapters.flag.rules"

local error, pairs, setmetatable = error, pairs, setmetatable

local M = {}

local Memory = {}
Memory.__index = Memory

function Memory:set(tree)
  local flags, err = rules.compile(tree, "flags")
  if not flags then return nil, err end
  self.flags = flags
  return true
end

function Memory:stats()
  local n = 0
  for _ in pairs(self.flags) do n = n + 1 end
  return { flags = n }
end

function M.new(opts)
  local impl = setmetatable({ flags = {} }, Memory)
  local ok, err = impl:set(opts and opts.flags or {})
  if not ok then error("flag memory: " .. err, 2) end
  return impl
end

function M.open(section)
  return M.new{ flags = section.flags }
end

return M
