-- Agents launched from Neovim: :PiIde open [agent] [args], :PiIde close [agent], the
-- <Plug>(PiIdeTerminal) toggle. One terminal per agent; its process outlives its window.
local agents = require("pi-ide.agents")
local log = require("pi-ide.core.log")

local M = {}

-- agent -> { provider = module, handle = provider's handle }; kept after the process ends
-- (a failed agent's window stays on screen) until the agent is started again.
local running = {}
-- The agent the toggle and :PiIde close act on: the one opened or shown last.
local last

local function provider_for(name)
  if name == "auto" then
    name = require("pi-ide.features.terminal.providers.snacks").available() and "snacks" or "split"
  end
  if name == "split" or name == "float" then
    return require("pi-ide.features.terminal.providers.native"), name
  end
  return require("pi-ide.features.terminal.providers." .. name), name
end

--- The terminal buffer of `agent` (running or ended), if it has one.
function M.buffer(agent)
  local t = running[agent]
  return t and t.handle.buf and vim.api.nvim_buf_is_valid(t.handle.buf) and t.handle.buf or nil
end

--- Whether `agent` runs in a terminal of this Neovim.
function M.is_running(agent)
  local buf = M.buffer(agent)
  local job = buf and vim.b[buf].terminal_job_id
  return job ~= nil and vim.fn.jobwait({ job }, 0)[1] == -1
end

local function focus(agent)
  local t = running[agent]
  t.provider.show(t.handle)
  last = agent
  if vim.api.nvim_get_current_buf() == t.handle.buf then
    vim.cmd.startinsert()
  end
end

-- The process ended: say so when it failed; close its window when it did not (option).
local function on_exit(agent, provider, handle, status)
  require("pi-ide.core.events").fire("PiIdeAgentExited", { agent = agent, status = status })
  if not vim.api.nvim_buf_is_valid(handle.buf) then
    return -- the user wiped the buffer (and so ended the process): nothing to say
  end
  if status ~= 0 then
    local about = agents.get(agent)
    local hint = about.exit_hint and about.exit_hint(status)
    local msg = ("%s exited with status %d"):format(about.label, status)
    log.notify(hint and ("%s: %s"):format(msg, hint) or msg, vim.log.levels.WARN)
  elseif require("pi-ide.core.config").values.terminal.close_on_exit then
    provider.close(handle)
  end
end

local function watch_exit(agent, provider, handle)
  vim.api.nvim_create_autocmd("TermClose", {
    buffer = handle.buf,
    once = true,
    callback = function()
      local status = type(vim.v.event) == "table" and vim.v.event.status or 0
      vim.schedule(function()
        on_exit(agent, provider, handle, status)
      end)
    end,
  })
end

local function launch(agent, args)
  local own = agents.get(agent).launch_args
  args = args or {}
  local cmd, agent_env = agents.command(agent, vim.list_extend(own and own(agents.command(agent, args)) or {}, args))
  local missing = agents.missing(agent, cmd)
  if missing then
    return log.notify(missing, vim.log.levels.ERROR)
  end
  local cwd = vim.fn.getcwd()
  local env, err = require("pi-ide.features.terminal.connect").env_for(agent, { env = agent_env, cwd = cwd })
  if not env then
    return log.notify(err, vim.log.levels.ERROR)
  end
  -- The window of one that failed before goes now.
  local old = running[agent]
  if old then
    running[agent] = nil
    old.provider.close(old.handle)
  end
  local provider, kind = provider_for(require("pi-ide.core.config").values.terminal.provider)
  env = vim.tbl_extend("force", agent_env, env)
  -- jobstart() refuses an empty table as `env` (E475: it is a list to it): nothing to add is nil.
  local spec = { cmd = cmd, cwd = cwd, env = next(env) and env or nil }
  local handle, open_err = provider.open(spec, kind)
  if not handle then
    return log.notify(open_err, vim.log.levels.ERROR)
  end
  require("pi-ide.core.events").fire("PiIdeAgentStarted", { agent = agent, provider = kind })
  if handle.external then
    return
  end
  running[agent] = { provider = provider, handle = handle }
  -- Keys typed here talk with the agent (core/typing.lua): its review may take the focus.
  vim.b[handle.buf].pi_ide_agent = agent
  watch_exit(agent, provider, handle)
  require("pi-ide.features.terminal.prompts").watch(agent, handle.buf)
  focus(agent)
end

--- :PiIde open [agent] [args...]: starts the agent, or shows and focuses the one running.
function M.open(agent, args)
  agent = agent or require("pi-ide.core.config").values.terminal.agent
  if not vim.tbl_contains(agents.launched(), agent) then
    return log.notify(("no agent %q to start (%s)"):format(agent, table.concat(agents.launched(), ", ")), vim.log.levels.ERROR)
  end
  if M.is_running(agent) then
    if args and #args > 0 then
      log.notify(("%s runs already; exit it to start it with new arguments"):format(agents.get(agent).label), vim.log.levels.WARN)
    end
    return focus(agent)
  end
  launch(agent, args)
end

-- The agent a command without one acts on: the last shown that still runs, else any.
local function current()
  if last and M.is_running(last) then
    return last
  end
  for _, name in ipairs(agents.launched()) do
    if M.is_running(name) then
      return name
    end
  end
end

--- :PiIde close [agent]: hides its window; the agent goes on running.
function M.close(agent)
  agent = agent or current()
  if not agent or not M.is_running(agent) then
    return log.notify(agent and ("%s is not running in Neovim"):format(agents.get(agent).label) or "no agent runs in Neovim", vim.log.levels.INFO)
  end
  local t = running[agent]
  t.provider.hide(t.handle)
end

--- <Plug>(PiIdeTerminal): in the agent's window, hide it; else show it (starting it first).
function M.toggle()
  local agent = current()
  if not agent then
    return M.open(nil, {})
  end
  local t = running[agent]
  local win = t.provider.window(t.handle)
  if win and win == vim.api.nvim_get_current_win() then
    vim.cmd.stopinsert()
    t.provider.hide(t.handle)
  else
    focus(agent)
  end
end

--- After :PiIde send / add: the agent's terminal, so the user types the question at once.
function M.after_send()
  local agent = current()
  if agent and require("pi-ide.core.config").values.terminal.focus_after_send then
    focus(agent)
  end
end

--- For :PiIde status: each agent running here, and whether it is shown: "<name> (shown)".
function M.summary()
  local out = {}
  for _, name in ipairs(agents.launched()) do
    if M.is_running(name) then
      local t = running[name]
      table.insert(out, ("%s (%s)"):format(name, t.provider.window(t.handle) and "shown" or "hidden"))
    end
  end
  return out
end

--- Its line in :PiIde status, while an agent runs here.
function M.status_lines()
  local terminals = M.summary()
  return #terminals > 0 and { "  agents launched here: " .. table.concat(terminals, ", ") } or {}
end

local function launched_or_files(arglead, n)
  local commands = require("pi-ide.core.commands")
  return n == 1 and commands.first_of(agents.launched())(arglead, n) or commands.files(true)(arglead, n)
end

--- Its :PiIde subcommands (core/commands.lua).
M.commands = {
  -- :PiIde open [agent] [args...]: the agent in a terminal, connected to this Neovim.
  open = {
    run = function(opts)
      M.open(opts.fargs[2], vim.list_slice(opts.fargs, 3))
    end,
    complete = launched_or_files,
  },
  close = {
    run = function(opts)
      M.close(opts.fargs[2])
    end,
    complete = function(arglead, n)
      return require("pi-ide.core.commands").first_of(agents.launched())(arglead, n)
    end,
  },
}

vim.api.nvim_create_autocmd("User", {
  group = vim.api.nvim_create_augroup("PiIdeTerminal", { clear = true }),
  pattern = "PiIdeStarted",
  callback = function()
    require("pi-ide.features.terminal.connect").restore(function(agent, tag)
      -- The chat's own launch (tagged) runs as long as the chat's process does.
      return tag == nil and M.is_running(agent) or tag ~= nil and require("pi-ide.features.chat").running()
    end)
  end,
})

return M
