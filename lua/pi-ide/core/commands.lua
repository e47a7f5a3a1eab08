-- :PiIde <subcommand>. With no subcommand it shows the status. Each subcommand is one entry:
-- what it runs (`run(opts)`, opts as nvim_create_user_command gives them) and how its
-- arguments complete (`complete(arglead, n)`: the n-th argument after the subcommand). Those
-- here are the server's; a feature's are its module's `commands` (lua/pi-ide/wiring.lua says
-- which module), an agent's its module's.
local parts = require("pi-ide.core.parts")

local M = {}

--- Completions of the first argument from a list (a function, when the list is known late).
function M.first_of(list)
  return function(arglead, n)
    if n ~= 1 then
      return {}
    end
    return vim.tbl_filter(function(w)
      return w:sub(1, #arglead) == arglead
    end, type(list) == "function" and list() or list)
  end
end

--- File names, for the first argument only, or for every argument.
function M.files(every)
  return function(arglead, n)
    return (every or n == 1) and vim.fn.getcompletion(arglead, "file") or {}
  end
end

local function start()
  local server = require("pi-ide.core.server")
  if server.running() then
    vim.notify("pi-ide.nvim: already running", vim.log.levels.INFO)
  elseif server.start() then
    local st = server.status()
    vim.notify(("pi-ide.nvim: listening on port %d (lockfile %s)"):format(st.port, st.lockfile), vim.log.levels.INFO)
  end
end

local function stop()
  if require("pi-ide.core.server").stop() then
    vim.notify("pi-ide.nvim: stopped", vim.log.levels.INFO)
  else
    vim.notify("pi-ide.nvim: not running", vim.log.levels.INFO)
  end
end

local function show_log()
  vim.cmd("botright split " .. vim.fn.fnameescape(require("pi-ide.core.log").path()))
  vim.bo.autoread = true
  vim.cmd("normal! G")
end

local function show_status()
  local chunks = {}
  for _, l in ipairs(require("pi-ide.core.status").lines()) do
    table.insert(chunks, { l .. "\n" })
  end
  vim.api.nvim_echo(chunks, false, {})
end

-- The server's own.
local own = {
  start = { run = start },
  stop = { run = stop },
  restart = {
    run = function()
      require("pi-ide.core.server").stop()
      start()
    end,
  },
  status = { run = show_status },
  log = { run = show_log },
}

-- Subcommand `name`'s entry, wherever it is: here, a feature's module (loaded now), an agent's.
local function entry(name)
  if own[name] then
    return own[name]
  end
  local path = parts.command_module(name)
  if path then
    return require(path).commands[name]
  end
  return parts.get("agents").commands()[name]
end

--- The subcommands' names, sorted.
function M.names()
  local names = vim.list_extend(vim.tbl_keys(own), parts.command_names())
  vim.list_extend(names, vim.tbl_keys(parts.get("agents").commands()))
  table.sort(names)
  return names
end

function M.run(opts)
  local name = opts.fargs[1] or "status"
  -- `:PiIde undo!` as `:PiIde! undo`: the bang on the subcommand, where it reads naturally.
  if name:sub(-1) == "!" and entry(name:sub(1, -2)) then
    name, opts.bang = name:sub(1, -2), true
  end
  local sub = entry(name)
  if not sub then
    vim.notify(
      ("pi-ide.nvim: unknown subcommand '%s' (try: %s)"):format(name, table.concat(M.names(), ", ")),
      vim.log.levels.ERROR
    )
    return
  end
  sub.run(opts)
end

--- Completes :PiIde: a subcommand's name, then its arguments as its entry says.
function M.complete(arglead, cmdline)
  local words = vim.split(cmdline:gsub("^%A*%a+%s*", ""), "%s+")
  if #words <= 1 then
    return vim.tbl_filter(function(name)
      return name:sub(1, #arglead) == arglead
    end, M.names())
  end
  local sub = entry(words[1])
  -- The argument being typed is the last word (empty right after a space).
  return sub and sub.complete and sub.complete(arglead, #words - 1) or {}
end

return M
