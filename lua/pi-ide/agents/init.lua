-- The agents, one module each (agents/<name>.lua), listed once here: the only list of them on
-- the Lua side. An agent's module says everything Lua knows of it: what it is called and how it
-- is installed, its default command (terminal.agents), its options, whether the server serves
-- it from the start and with what, what connects one launched from Neovim to this Neovim, and
-- its lines in :PiIde status and :checkhealth. The core's side of each agent is src/agents/.
-- Everything else asks this registry; adding an agent is a module and a line in `names`.
-- Each module spells its entry out as a plain table, though their first lines look alike: the
-- fields differ in value and in which are there, and a constructor would hide from the reader
-- of one agent what it is.
-- An entry is an agent (a product), or `mcp`: every MCP client, served alike through pi-ide-mcp.
--
---@class PiIde.Agent
---@field name string Its name here, in the core (for one it serves), in :PiIde open and in terminal.agents.
---@field label string How messages name it ("Claude Code").
---@field short string How a tight place names it ("Claude").
---@field install string What to run to install it.
---@field cmd? string[] The program and its first arguments (terminal.agents.<name>.cmd's default); none: not launched from Neovim.
---@field options? table<string, table> Top-level options of its own (core/options.lua's words).
---@field serve? fun(values: table): table? The core's options to serve it from the start, or nil.
---@field connect? fun(launch: PiIde.Launch): table<string, string>?, string? The environment that connects a launch to this Neovim, or nil and why.
---@field launch_args? fun(argv: string[]): string[] Arguments that connect a launch to this Neovim or make it ask (after cmd, before the user's; `argv`: what would run without them).
---@field served_as? string The agent the core serves it as, when it speaks another's wire (default: its name).
---@field exit_hint? fun(status: integer): string? Why its terminal ended with `status`, when it can tell.
---@field writes_own_proposal? boolean It writes its own proposal after a yes in its terminal, whatever its closeDiff is answered (review/ignored.lua says so).
---@field after_restart? string What to tell when the server restarted while a launch of it runs.
---@field status_line? fun(st: table): string Its line in :PiIde status.
---@field health_title? string Its section of :checkhealth pi-ide.
---@field health? fun(info: table) That section's checks (vim.health).
---@field chat? table How the chat window runs it over Pi's RPC (for the one agent it hosts so).
---@field acp? { cmd: string[], install?: string, env?: table<string, string>|fun(): table<string, string>, native?: fun(program: string): string?, login?: string, mcp: "stdio"|false|fun(server: table): string[], writes_itself?: boolean } How :PiIde chat {name} runs it over ACP (features/chat/acp/): its command, what installs that (default `install`), the environment it needs (a table, or a function called at start; the user's adds to it), the program to run when cmd names a launcher, what the user runs to sign in (default: the program), how it takes this Neovim's tools: a stdio MCP server in session/new, none, or the arguments that give it one ({ name, command, args }), and whether it writes files itself after an allow and mirrors that write as fs/write_text_file (else that write is the client's to make).
---@field commands? table<string, table> :PiIde subcommands of its own, as core/commands.lua's entries ({ run, complete }).
--
---@class PiIde.Launch
---@field env table<string, string> The environment the user's config adds (terminal.agents).
---@field cwd string Where it runs.
---@field tag? string A launch that must be told apart (the chat's): its own lockfile and token.
local M = {}

--- Every agent, in the order they are listed to the user.
M.names = { "pi", "claude", "copilot", "gemini", "qwen", "codex", "opencode", "cline", "kilo", "mcp" }

--- The module of agent `name`; nil when there is none.
---@return PiIde.Agent?
function M.get(name)
  if not vim.tbl_contains(M.names, name) then
    return nil
  end
  return require("pi-ide.agents." .. name)
end

--- The agents :PiIde open starts (those with a program of their own), in order.
---@return string[]
function M.launched()
  return vim.tbl_filter(function(name)
    return M.get(name).cmd ~= nil
  end, M.names)
end

--- Every agent's module, in order.
---@return PiIde.Agent[]
function M.all()
  return vim.tbl_map(M.get, M.names)
end

--- The :PiIde subcommands the agents bring, by name.
function M.commands()
  local out = {}
  for _, a in ipairs(M.all()) do
    for name, entry in pairs(a.commands or {}) do
      out[name] = entry
    end
  end
  return out
end

--- The agent the chat window hosts.
---@return PiIde.Agent
function M.chat()
  for _, a in ipairs(M.all()) do
    if a.chat then
      return a
    end
  end
end

--- The argv to run `name` with `args` added, and its extra environment (terminal.agents).
---@return string[] cmd, table<string, string> env
function M.command(name, args)
  local config = require("pi-ide.core.config")
  local cfg = config.values.terminal.agents[name] or {}
  local cmd = vim.list_extend(vim.deepcopy(cfg.cmd or M.get(name).cmd), args or {})
  return cmd, vim.deepcopy(cfg.env or {})
end

--- Nil when the program can be run, else the message saying what to install.
function M.missing(name, cmd)
  if vim.fn.executable(cmd[1]) == 1 then
    return nil
  end
  return ("%s not found on PATH; install it: %s"):format(cmd[1], M.get(name).install)
end

--- The core's options for the agents served from the start (by their options in `values`).
function M.served_at_start(values)
  local out = {}
  for _, a in ipairs(M.all()) do
    out[a.name] = a.serve and a.serve(values) or nil
  end
  return out
end

--- The names of the options that decide what the server serves (read when it starts).
function M.start_options()
  local out = {}
  for _, a in ipairs(M.all()) do
    vim.list_extend(out, vim.tbl_keys(a.options or {}))
  end
  return out
end

--- The core's side of agent `name` when it is served: { lockfile, socket? }.
function M.served(name)
  local server = require("pi-ide.core.server")
  return (server.status().served or {})[name]
end

--- Asks the core to serve `name` from now on; returns its side, or nil and why.
function M.serve(name, options)
  local ok, side = pcall(require("pi-ide.core.native").get().serve, name, options or vim.empty_dict())
  if not ok then
    return nil, ("cannot serve %s: %s"):format(M.get(name).label, tostring(side))
  end
  return side
end

--- For :checkhealth, of an agent served on request (its option `name`, or a launch from
--- Neovim): says why it is not served, if it is not (the option off, no server, or a server
--- started without it), naming it `title`; else returns its side, for its own checks.
---@param info table require("pi-ide").info()
---@return table? side
function M.check_served(info, name, title)
  local h = vim.health
  local side = info.running and (info.served or {})[name]
  if not require("pi-ide.core.config").values[name] and not side then
    h.info(("%s off (option %s; :PiIde open %s serves it for its launch)"):format(title, name, name))
  elseif not info.running then
    h.info(title .. " on; the server is not running")
  elseif not side then
    h.warn(title .. " on, but the running server was started without it: :PiIde stop, then :PiIde start")
  else
    return side
  end
end


-- The variables each agent put in Neovim's own environment, by its name (companion()), and
-- the agents whose variables follow the server's start and stop.
local exported, following = {}, {}

-- Puts agent `name`'s `env` in Neovim's own environment, which :terminal inherits, in place of
-- what it put there before (nil: takes that away).
local function export(name, env)
  for k in pairs(exported[name] or {}) do
    vim.env[k] = nil
  end
  for k, v in pairs(env or {}) do
    vim.env[k] = v
  end
  exported[name] = env
end

--- The shared part of an agent that speaks the IDE companion protocol (Gemini CLI's and Qwen
--- Code's IDE modes; src/agents/companion/): MCP over HTTP on a loopback port of its own, found
--- through a file (`file`: what the user calls it) that names it. Served from the start with
--- option `name`, or once Neovim launches it; while served, terminals Neovim starts get
--- `env(port)`, what makes the CLI pick this Neovim among several. Returns its module's
--- serve, connect, status_line and health.
---@param spec { name: string, title: string, file: string, env: fun(port: string): table<string, string> }
function M.companion(spec)
  local name = spec.name
  local function env_of(side)
    local port = side and side.socket and side.socket:match(":(%d+)$")
    return port and spec.env(port) or nil
  end
  local function export_while_served()
    if following[name] then
      return
    end
    following[name] = true
    local group = vim.api.nvim_create_augroup("PiIdeEnv_" .. name, { clear = true })
    vim.api.nvim_create_autocmd("User", { group = group, pattern = "PiIdeStarted", callback = function()
      export(name, env_of(M.served(name)))
    end })
    vim.api.nvim_create_autocmd("User", { group = group, pattern = "PiIdeStopped", callback = function()
      export(name, nil)
    end })
  end
  local function options()
    return { socket_dir = vim.fn.stdpath("run") }
  end
  local out = {}
  function out.serve(values)
    if not values[name] then
      return nil
    end
    export_while_served()
    return options()
  end
  ---@param launch PiIde.Launch
  function out.connect(launch)
    local side, err = M.serve(name, options())
    if not side then
      return nil, err
    end
    export_while_served()
    local env = env_of(side)
    export(name, env)
    return env or nil, not env and ("the %s side has no port"):format(M.get(name).label) or nil
  end
  function out.status_line(st)
    local side = (st.served or {})[name]
    return side and ("  %s: http://%s/mcp, %s %s"):format(name, side.socket, spec.file, side.lockfile)
      or ("  %s: off (setup({ %s = true }))"):format(name, name)
  end
  ---@param info table require("pi-ide").info()
  function out.health(info)
    local side = M.check_served(info, name, spec.title)
    if side then
      vim.health.ok(("%s served: http://%s/mcp, %s %s"):format(spec.title, side.socket, spec.file, side.lockfile))
      vim.health.info("the CLI connects with its IDE mode on (/ide enable in it, or ide.enabled in its settings)")
    end
  end
  return out
end

return M
