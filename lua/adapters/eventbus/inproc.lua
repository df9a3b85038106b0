-- adapters.eventbus.inproc: the event bus of one process, across its worker threads: a message
-- published in any worker of `zever serve` reaches the subscribers of every worker that opened
-- the bus under the same name (host/bus/: a hub in C memory; each worker's mailbox is drained
-- on its own event loop). Nothing crosses a process (use redis or postgres for that).
--
--   local impl = inproc.new{ name = "default", max_pending = 65536 }
--   impl:start(deliver) / impl:publish(topic, msg) / impl:close()   (the eventbus contract)
--   impl:stats() -> { dropped_inproc, pending_inproc }
--   inproc.open(section) -> impl (the adapter contract)
--
-- Messages are JSON (zever.json), as on redis and postgres: a subscriber gets a copy, decoded
-- in its own worker. publish copies the encoded message once into the hub, which every mailbox
-- shares. A worker whose mailbox holds max_pending messages not yet drained (its loop is busy)
-- drops the newest ones (counted in stats().dropped_inproc), like the front-end's slow
-- subscribers; publishers never wait. This worker's own messages come back through its mailbox
-- too, so delivery never runs inside publish.

local core = require "zever.bus_core"
local json = require "zever.json"
local errors = require "zever.errors"

local setmetatable, pcall, tostring = setmetatable, pcall, tostring
local encode, decode = json.encode, json.decode

local M = {}

local Inproc = {}
Inproc.__index = Inproc

function Inproc:start(deliver)
  self.box = self.hub:attach(self.max_pending, function(topic, body)
    local ok, msg = pcall(decode, body)
    if ok then deliver(topic, msg) end
  end)
  return true
end

function Inproc:publish(topic, msg)
  local ok, body = pcall(encode, msg)
  if not ok then
    return nil, errors.new("eventbus", "invalid", "the message is not a JSON value: "
      .. tostring(body))
  end
  local delivered, err, code = self.hub:publish(topic, body)
  if not delivered then return nil, errors.core("eventbus", code, err) end
  return true
end

function Inproc:stats()
  local dropped, pending = 0, 0
  if self.box then dropped, pending = self.box:counts() end
  return { dropped_inproc = dropped, pending_inproc = pending }
end

function Inproc:close()
  if self.box then self.box:detach() end
  self.box = nil
  if self.hub then self.hub:release() end
  self.hub = nil
  return true
end

-- opts: name (workers that open one name share a bus; "default"), max_pending (messages a
-- worker's mailbox holds before it drops the newest; 65536).
function M.new(opts)
  if opts ~= nil and type(opts) ~= "table" then
    error("eventbus.inproc.new: expects an options table", 2)
  end
  opts = opts or {}
  local hub, msg, code = core.open(opts.name or "default")
  if not hub then return nil, errors.core("eventbus", code, msg) end
  return setmetatable({ hub = hub, max_pending = opts.max_pending or 65536, box = nil }, Inproc)
end

function M.open(section)
  return M.new{ name = section and section.name ~= "" and section.name or nil }
end

return M
