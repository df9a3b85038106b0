-- dsl.resolve.work: the resolver phase for jobs (queue, retry, timeout) and schedules (cron, dispatch).
-- It adds methods to the shared state S (dsl/resolve/common.lua); dsl/resolver.lua runs them.

if jit then jit.off(true, true) end -- interpreted, like all of the resolver (dsl/resolver.lua)

local C = require "dsl.resolve.common"
local S = C.S
local cron = require "dsl.resolve.cron"
local option_values = C.option_values
local BACKOFF = C.BACKOFF
local JOB_OPTIONS = C.JOB_OPTIONS
local SCHEDULE_OPTIONS = C.SCHEDULE_OPTIONS
local SAGA_STEP_OPTIONS = C.SAGA_STEP_OPTIONS
local article = C.article
local describe = C.describe
local duration = require "zever.duration"
local name_node = C.name_node
local suggest = C.suggest
local value_text = C.value_text

function S:retry(o, node)
  local retry = {}
  for _, v in ipairs(option_values(o)) do
    local args = v.args or {}
    if v.kind == "call" and v.name == "max_attempts" then
      local a = args[1]
      if #args ~= 1 or a.name or a.value.kind ~= "int" or a.value.value < 1 then
        self:err(v, "max_attempts takes a count >= 1, found %s", value_text(v))
      else
        retry.max_attempts = a.value.value
      end
    elseif v.kind == "call" and v.name == "backoff" then
      local a = args[1]
      if not a or a.name or a.value.kind ~= "ident" or not BACKOFF[a.value.name] then
        self:err(v, "backoff starts with exponential, linear or fixed, found %s",
          a and value_text(a.value) or "nothing")
      else
        retry.backoff = a.value.name
      end
      for i = 2, #args do
        local b = args[i]
        if b.name ~= "base" and b.name ~= "max" then
          self:err(b, "backoff takes base: and max: durations%s", suggest(b.name, { "base", "max" }))
        elseif b.value.kind ~= "duration" or not duration.parse(b.value.text) then
          self:err(b.value, "backoff %s: expected a duration (10s), found %s", b.name,
            describe(b.value))
        else
          retry[b.name] = b.value.text
        end
      end
    else
      self:err(v, "retry takes max_attempts(n) and backoff(kind, base: 10s), found %s%s",
        value_text(v), suggest(v.name, { "backoff", "max_attempts" }))
    end
  end
  node.retry = retry
end

function S:job(sym)
  local d = sym.decl
  local node = { kind = "job", name = d.name, module = sym.module, file = sym.file,
    line = d.line, col = d.col, doc = d.doc, queue = "default" }
  node.inputs = self:params(d.params, "job " .. d.name)
  local opts = self:options(d.options, JOB_OPTIONS, "job " .. d.name)
  if opts.queue then
    local v = opts.queue.value
    if v.kind ~= "ident" and v.kind ~= "string" then
      self:err(v, "queue takes a name, found %s", describe(v))
    else
      node.queue = v.name or v.value
    end
  end
  if opts.retry then self:retry(opts.retry, node) end
  if opts.timeout then
    local v = opts.timeout.value
    if v.kind ~= "duration" or not duration.parse(v.text) then
      self:err(v, "timeout takes a duration (30s), found %s", describe(v))
    else
      node.timeout = v.text
    end
  end
  return node
end

function S:schedule(sym)
  local d = sym.decl
  local node = { kind = "schedule", name = d.name, module = sym.module, file = sym.file,
    line = d.line, col = d.col, doc = d.doc }
  local opts = self:options(d.options, SCHEDULE_OPTIONS, "schedule " .. d.name)
  if not opts.cron then self:err(name_node(d), "schedule %s has no cron:", d.name) end
  if not opts.dispatch then self:err(name_node(d), "schedule %s has no dispatch:", d.name) end
  if opts.cron then
    local v = opts.cron.value
    if v.kind ~= "string" then
      self:err(v, 'cron takes a string ("0 9 * * *"), found %s', describe(v))
    else
      local ok, err = cron.check(v.value)
      if ok then node.cron = v.value else self:err(v, "bad cron %q: %s", v.value, err) end
    end
  end
  if opts.dispatch then self:dispatch(opts.dispatch.value, node) end
  return node
end

function S:dispatch(v, node)
  if v.kind ~= "ident" and v.kind ~= "call" then
    return self:err(v, "dispatch names a job (SendDigest()), found %s", describe(v))
  end
  local sym = self:lookup(v.name, self.mod)
  if not sym then
    local jobs = {}
    for _, q in ipairs(self.order) do
      local s = self.symbols[q]
      if s.kind == "job" then jobs[#jobs + 1] = s.module == self.mod and s.decl.name or q end
    end
    return self:err(v, "dispatch names an unknown job %s%s", v.name, suggest(v.name, jobs))
  end
  if sym.kind ~= "job" then
    return self:err(v, "dispatch names %s, %s, not a job", v.name, article(sym.kind))
  end
  node.dispatch = sym.qname
  local params = sym.decl.params or {}
  local by, given, args = {}, {}, {}
  for i, p in ipairs(params) do by[p.name] = i end
  for i, a in ipairs(v.args or {}) do
    local idx = a.name and by[a.name] or (not a.name and i) or nil
    local p = idx and params[idx]
    if not p then
      local names = {}
      for _, q in ipairs(params) do names[#names + 1] = q.name end
      if a.name then
        self:err(a, "job %s has no parameter %s%s", v.name, a.name, suggest(a.name, names))
      else
        self:err(a, "job %s takes %d argument%s, found %d", v.name, #params,
          #params == 1 and "" or "s", #v.args)
      end
    else
      given[p.name] = true
      args[#args + 1] = p.name .. "=" .. value_text(a.value)
    end
  end
  for _, p in ipairs(params) do
    if not given[p.name] and not (p.type and p.type.optional) then
      self:err(v, "dispatch of %s is missing the argument %s", v.name, p.name)
    end
  end
  node.args = args
end


-- sagas -----------------------------------------------------------------------------------------

-- A Service.Rpc (or module.Service.Rpc) reference of a saga step: { service, rpc, ref } or nil
-- after an error. Sagas may name RPCs of other modules.
function S:rpc_ref(v, label)
  if v.kind ~= "ident" or not v.name:find(".", 1, true) then
    return self:err(v, "%s: takes Service.Rpc, found %s", label, describe(v))
  end
  local svc_name, rpc_name = v.name:match("^(.*)%.([^.]+)$")
  local sym = self:lookup(svc_name, self.mod)
  if not sym or sym.kind ~= "service" then
    local svcs = {}
    for _, q in ipairs(self.order) do
      local s = self.symbols[q]
      if s.kind == "service" then svcs[#svcs + 1] = s.module == self.mod and s.decl.name or q end
    end
    return self:err(v, "%s: %s is %s%s", label, svc_name,
      sym and ("a " .. sym.kind .. ", not a service") or "not a declared service",
      suggest(svc_name, svcs))
  end
  local names = {}
  for _, r in ipairs(sym.decl.rpcs or {}) do
    if r.name == rpc_name then
      return { kind = "rpc_ref", service = sym.decl.name, module = sym.module, rpc = rpc_name,
        ref = sym.qname .. "." .. rpc_name, line = v.line, col = v.col }
    end
    names[#names + 1] = r.name
  end
  return self:err(v, "%s: service %s has no rpc %s%s", label, sym.decl.name, rpc_name,
    suggest(rpc_name, names))
end

-- saga Name { step s { execute: Svc.Rpc  compensate: Svc.Rpc  pivot: true } }: each step's RPCs
-- exist, at most one pivot, and no compensation after the pivot (those steps roll forward).
function S:saga(sym)
  local d = sym.decl
  local node = { kind = "saga", name = d.name, module = sym.module, file = sym.file,
    line = d.line, col = d.col, doc = d.doc, steps = {} }
  local steps = d.steps or {}
  self:unique_names(steps, "step", "saga " .. d.name)
  local pivot
  for _, st in ipairs(steps) do
    local what = "step " .. st.name
    local opts = self:options(st.options, SAGA_STEP_OPTIONS, what)
    local step = { kind = "step", name = st.name, line = st.line, col = st.col, doc = st.doc }
    if opts.execute then
      step.execute = self:rpc_ref(opts.execute.value, "execute")
    else
      self:err(st, "saga step %s has no execute: Service.Rpc (required)", st.name)
    end
    if opts.compensate then
      step.compensate = self:rpc_ref(opts.compensate.value, "compensate")
      if pivot then
        self:err(opts.compensate, "step %s comes after the pivot step %s (%d:%d): steps after " ..
          "the pivot roll forward and are never compensated", st.name, pivot.name, pivot.line,
          pivot.col)
      end
    end
    if opts.pivot then
      local v = opts.pivot.value
      if v.kind ~= "bool" then
        self:err(v, "pivot is true or false, found %s", describe(v))
      elseif v.value then
        if pivot then
          self:err(opts.pivot, "saga %s has a second pivot step %s (the first is %s at %d:%d)",
            d.name, st.name, pivot.name, pivot.line, pivot.col)
        else
          pivot = step
          step.pivot = true
        end
      end
    end
    node.steps[#node.steps + 1] = step
  end
  return node
end
