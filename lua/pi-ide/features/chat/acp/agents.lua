-- The ACP agents :PiIde chat knows, and how each runs: cmd (the program and its arguments), env
-- (added to Neovim's; the user's adds to the agent's own, which may be a function called at
-- start), label (the header's and the reviews' name), install (what the user runs when it is
-- missing), native (the program to run instead of a launcher that cmd names), login (what the user runs to sign in), mcp ("stdio": this Neovim's tools go in session/new through pi-ide-mcp;
-- a function: the arguments that give them on its command line; false: none), writes_itself (true: it
-- writes files itself after an allow, and its fs/write_text_file of the change is a mirror of
-- that, answered without writing; else such a write is ours). The agents' modules give the defaults;
-- `chat.agents` adds agents and changes these, field by field.
local M = {}

-- The agents whose module (lua/pi-ide/agents/) says how they run over ACP.
local function known()
  local out = {}
  for _, a in ipairs(require("pi-ide.agents").all()) do
    if a.acp then
      out[a.name] = { label = a.short, cmd = vim.deepcopy(a.acp.cmd), install = a.acp.install or a.install, mcp = a.acp.mcp, env = a.acp.env, native = a.acp.native, login = a.acp.login, writes_itself = a.acp.writes_itself }
    end
  end
  return out
end

local function env_of(env)
  return type(env) == "function" and env() or env or {}
end

--- Agent `name` as configured (nil when it is neither known nor configured).
function M.get(name)
  local user = (require("pi-ide.core.config").values.chat.agents or {})[name]
  local base = known()[name]
  if not (base or user) then
    return nil
  end
  local spec = vim.tbl_extend("force", { env = {}, mcp = "stdio" }, base or {}, user or {})
  -- The user's env adds to the agent's own (which may be what makes it ask), key by key; the
  -- agent's may be worked out at start.
  local base_env, user_env = (base or {}).env, (user or {}).env
  spec.env = function()
    return vim.tbl_extend("force", env_of(base_env), env_of(user_env))
  end
  spec.name = name
  spec.label = spec.label or name
  spec.install = spec.install or ("see chat.agents." .. name .. ".cmd")
  return spec
end

--- Every ACP agent's name: the known ones and the user's.
function M.names()
  local builtin = known()
  local out = vim.tbl_keys(builtin)
  for name in pairs(require("pi-ide.core.config").values.chat.agents or {}) do
    if not builtin[name] then
      table.insert(out, name)
    end
  end
  table.sort(out)
  return out
end

return M
