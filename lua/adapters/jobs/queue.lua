-- adapters.jobs.queue: jobs over the queue battery (the only jobs adapter). A job is a queue
-- message; its lease, redelivery and delay are the queue's. The dead letters (failed_jobs) live
-- in a table of the app's database.
--
--   local impl = jq.new(queue, { db = db | function() return db end, table = "failed_jobs" })
--   impl:enqueue(topic, payload, delay) -> id | nil, err       (queue:push)
--   impl:claim(topic) -> msg | nil[, err]                      (queue:pop)
--   impl:complete(msg)      ack: the job is done
--   impl:again(msg, delay)  nack with requeue after delay seconds (a retry; attempt + 1)
--   impl:release(msg)       nack with requeue at once (drain gives unfinished jobs back)
--   impl:bury(msg, record)  -> id | nil, err: inserts the failed_jobs row and acks msg
--   impl:failed(limit)      -> rows oldest first (args decoded) | nil, err
--   impl:retry(id | nil)    -> n: dispatches the failed jobs again, removing their rows
--   impl:forget(id | nil)   -> n: removes failed_jobs rows (nil: all)
--   jq.open(section, ctx)   -> a zever.jobs over ctx:get("queue") (the container's factory)
--
-- With the db queue on the same database, bury and retry run in one transaction, so a dead
-- letter is never both recorded and still queued. The table is created on first use (CREATE
-- TABLE IF NOT EXISTS); the database is resolved only then, so an app that never dead-letters
-- never needs one. This file must not decide retries or run handlers (zever.jobs, zever.worker).

local jobs = require "zever.jobs"
local json = require "zever.json"

local type, error, format, setmetatable, tostring, ipairs = type, error, string.format,
  setmetatable, tostring, ipairs

local M = {}

local SCHEMA = [[
CREATE TABLE IF NOT EXISTS "%s" (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  queue TEXT NOT NULL,
  name TEXT NOT NULL,
  args TEXT NOT NULL,
  error TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  failed_at REAL NOT NULL
)]]

local J = {}
J.__index = J

local function fail(err)
  if type(err) == "table" and err.code then
    return nil, jobs.error(err.code, tostring(err.message or err))
  end
  return nil, jobs.error("unavailable", tostring(err))
end

-- The database with the failed_jobs table in it; resolved and prepared on first use.
function J:database()
  local db = self.db
  if not self.ready then
    if type(db) == "function" then
      local got, err = db()
      if not got then return fail(err) end
      db = got
      self.db = db
    end
    -- zever.db raises on SQL errors; this battery reports them as values ("unavailable", ...).
    if db.try_handle and not db.soft then
      db = db:try_handle()
      self.db = db
    end
    local ok, err = db:exec(format(SCHEMA, self.table))
    if not ok then return fail(err) end
    self.ready = true
  end
  return db
end

function J:enqueue(topic, payload, delay)
  local id, err = self.queue:push(topic, payload, delay > 0 and { delay = delay } or nil)
  if not id then return fail(err) end
  return id
end

function J:claim(topic)
  local msg, err = self.queue:pop(topic)
  if msg == nil and err then return fail(err) end
  return msg
end

function J:complete(msg)
  return self.queue:ack(msg)
end

function J:again(msg, delay)
  return self.queue:nack(msg, true, delay)
end

function J:release(msg)
  return self.queue:nack(msg, true, 0)
end

-- The failed_jobs row and the ack, in one transaction (one statement each).
function J:bury(msg, r)
  local db, err = self:database()
  if not db then return nil, err end
  local q = self.queue
  local ok, id = pcall(db.transaction, db, function(tx)
    local res, ierr = tx:exec(self.sql.insert, { r.queue, r.name, r.args_json, r.error,
      r.attempts, r.failed_at, n = 6 })
    if not res then error(ierr, 0) end
    q:ack(msg)
    return res.last_insert_id
  end)
  if not ok or not id then return fail(id) end
  return id
end

function J:failed(limit)
  local db, err = self:database()
  if not db then return nil, err end
  local rows, qerr = db:query(self.sql.list .. (limit and format(" LIMIT %d", limit) or ""))
  if not rows then return fail(qerr) end
  for _, r in ipairs(rows) do
    local okj, v = pcall(json.decode, r.args)
    r.args = okj and v or r.args
  end
  return rows
end

local function where(id)
  if id then return " WHERE id = ?", { id, n = 1 } end
  return "", { n = 0 }
end

function J:retry(id)
  local db, err = self:database()
  if not db then return nil, err end
  local cond, binds = where(id)
  local ok, n = pcall(db.transaction, db, function(tx)
    local rows, qerr = tx:query(self.sql.list_raw .. cond, binds)
    if not rows then error(qerr, 0) end
    for _, r in ipairs(rows) do
      local pid, perr = self.queue:push(jobs.PREFIX .. r.queue,
        '{"name":' .. json.encode(r.name) .. ',"args":' .. r.args .. '}')
      if not pid then error(perr, 0) end
    end
    local res, derr = tx:exec(self.sql.delete .. cond, binds)
    if not res then error(derr, 0) end
    return #rows
  end)
  if not ok or not n then return fail(n) end
  return n
end

function J:forget(id)
  local db, err = self:database()
  if not db then return nil, err end
  local cond, binds = where(id)
  local res, derr = db:exec(self.sql.delete .. cond, binds)
  if not res then return fail(derr) end
  return res.changes
end

-- The queue and the database belong to the container: close only stops using them.
function J:close()
  self.queue, self.db = nil, nil
  return true
end

function M.new(q, opts)
  if type(q) ~= "table" or type(q.pop) ~= "function" then
    error("jobs.queue.new: expects a zever.queue", 2)
  end
  opts = opts or {}
  local t = opts.table or "failed_jobs"
  if type(t) ~= "string" or not t:match("^[%a_][%w_]*$") then
    error("jobs.queue: table must be a plain identifier ([A-Za-z_][A-Za-z0-9_]*)", 2)
  end
  local db = opts.db
  if db ~= nil and type(db) ~= "function" and (type(db) ~= "table" or type(db.exec) ~= "function")
  then
    error("jobs.queue: db must be a zever.db database or a function returning one", 2)
  end
  return setmetatable({
    queue = q,
    db = db or function() return nil, jobs.error("unavailable", "no database for failed jobs") end,
    table = t,
    ready = false,
    sql = {
      insert = format('INSERT INTO "%s" (queue, name, args, error, attempts, failed_at) '
        .. 'VALUES (?, ?, ?, ?, ?, ?)', t),
      list = format('SELECT id, queue, name, args, error, attempts, failed_at FROM "%s" '
        .. 'ORDER BY id', t),
      list_raw = format('SELECT id, queue, name, args FROM "%s"', t),
      delete = format('DELETE FROM "%s"', t),
    },
  }, J)
end

-- The container's factory: section is the config's jobs section.
function M.open(section, ctx)
  local q, err = ctx:get("queue")
  if not q then return nil, err end
  local impl = M.new(q, { table = section.failed_table,
    db = function() return ctx:get("db") end })
  return jobs.wrap(impl, {
    queue = section.queue, attempts = section.attempts, base = section.backoff_base,
    cap = section.backoff_cap, jitter = section.backoff_jitter,
    timeout = (section.timeout and section.timeout > 0) and section.timeout
      or (q.visibility or 30),
  })
end

return M
