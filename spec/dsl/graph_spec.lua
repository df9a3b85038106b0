-- zever graph and zever check-boundaries (dsl/graph.lua) on a two-module schema, through the
-- real binary.

local process = require "spec.support.process"
local fs = require "spec.support.files"

local ACCOUNTS = [[
entity User {
  id: uuid @primary
  email: string @unique
  has_many tags: Tag @foreign_key(user_id)
}
entity Tag {
  id: uuid @primary
  belongs_to user: User @foreign_key(user_id)
}
service AccountService {
  rpc Charge(id: uuid) -> billing.Invoice { http: POST "/v1/charge"  auth: required }
}
]]

local BILLING = [[
entity Invoice {
  id: uuid @primary
  belongs_to user: accounts.User @foreign_key(user_id)
  many_to_many lines: Line { join_table: invoice_lines }
}
entity Line { id: uuid @primary }
service BillingService {
  rpc Get(id: uuid) -> Invoice { http: GET "/v1/invoices/{id}"  auth: required }
}
saga Pay {
  step charge { execute: accounts.AccountService.Charge }
}
]]

describe("zever graph and check-boundaries", function()
  local dir

  local function zever(args)
    return process.run("cd " .. process.quote(dir) .. " && " .. process.quote(require("zever.sys").exe())
      .. " " .. args)
  end

  before_each(function()
    dir = fs.tmpdir()
    assert(os.execute("mkdir -p " .. process.quote(dir .. "/schema/accounts") .. " "
      .. process.quote(dir .. "/schema/billing")))
    fs.write(dir .. "/schema/accounts/a.zen", ACCOUNTS)
    fs.write(dir .. "/schema/billing/b.zen", BILLING)
  end)

  after_each(function() fs.rm_rf(dir) end)

  it("draws the entities and relations as a Mermaid ER diagram and the module graph", function()
    local r = zever("graph")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal([[
erDiagram
  accounts_Tag {
    uuid id PK
    uuid user_id FK
  }
  accounts_User ||--o{ accounts_Tag : "user"
  accounts_User {
    uuid id PK
    string email UK
  }
  billing_Invoice {
    uuid id PK
    uuid user_id FK
  }
  accounts_User ||--o{ billing_Invoice : "user"
  billing_Invoice }o--o{ billing_Line : "invoice_lines"
  billing_Line {
    uuid id PK
  }

flowchart LR
  accounts[accounts]
  billing[billing]
  accounts -->|1| billing
  billing -->|2| accounts
]], r.stdout)
  end)

  it("limits the ER diagram to one module and what it points at", function()
    local r = zever("graph --module accounts --er")
    assert.are.equal(0, r.code, r.stderr)
    assert.is_nil(r.stdout:find("billing", 1, true))
    assert.is_nil(r.stdout:find("flowchart", 1, true))
    assert.matches('accounts_User ||--o{ accounts_Tag : "user"', r.stdout, 1, true)
    r = zever("graph --module nope")
    assert.are.equal(2, r.code)
    assert.matches("no module nope (modules: accounts, billing)", r.stderr, 1, true)
  end)

  it("reports the relation and the rpc output that cross modules, not the saga step", function()
    local r = zever("check-boundaries")
    assert.are.equal(1, r.code)
    assert.matches("schema/accounts/a.zen:11:3: [boundaries] an rpc output crosses from module accounts "
      .. "to module billing: AccountService.Charge -> billing.Invoice", r.stdout, 1, true)
    assert.matches("schema/billing/b.zen:3:3: [boundaries] a relation crosses from module billing to "
      .. "module accounts: belongs_to Invoice.user -> accounts.User", r.stdout, 1, true)
    assert.is_nil(r.stdout:find("saga", 1, true))
    assert.matches("2 crossings", r.stderr, 1, true)
  end)

  it("exits 0 on a schema whose modules keep to themselves", function()
    fs.write(dir .. "/schema/accounts/a.zen", (ACCOUNTS:gsub("billing%.Invoice", "User")))
    fs.write(dir .. "/schema/billing/b.zen", (BILLING:gsub("  belongs_to user: accounts.User @foreign_key%(user_id%)\n", "")))
    local r = zever("check-boundaries --json")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("[]\n", r.stdout)
  end)
end)
