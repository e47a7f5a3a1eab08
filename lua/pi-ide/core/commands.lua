-- :PiIde <subcommand>. With no subcommand it shows the status. Each subcommand is one entry:
-- what it runs (`run(opts)`, opts as nvim_create_user_command gives them) and how its
-- arguments complete (`complete(arglead, n)`: the n-th argument after the subcommand).
local M = {}

-- Completions of the first argument from a list (a function, when the list is known late).
local function first_of(list)
  return function(arglead, n)
    if n ~= 1 then
      return {}
    end
    return vim.tbl_filter(function(w)
      return w:sub(1, #arglead) == arglead
    end, type(list) == "function" and list() or list)
  end
end

-- File names, for the first argument only, or for every argument.
local function files(every)
  return function(arglead, n)
    return (every or n == 1) and vim.fn.getcompletion(arglead, "file") or {}
  end
end

local function agent_names()
  return require("pi-ide.agents").launched()
end

local function chat_actions()
  return require("pi-ide.features.chat.command").names()
end

-- :PiIde accept / reject act on the review the user is in.
local function in_review(action)
  local review = require("pi-ide.features.review")
  local r = review.current()
  if r then
    review[action](r)
  else
    vim.notify(("pi-ide.nvim: not in a review (open reviews: %d)"):format(#review.list()), vim.log.levels.WARN)
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

-- :PiIde build [source]: the release's prebuilt library when at a release tag, else cargo.
local function build(opts)
  if opts.fargs[2] and opts.fargs[2] ~= "source" then
    vim.notify(("pi-ide.nvim: :PiIde build takes no argument but 'source' (got '%s')"):format(opts.fargs[2]), vim.log.levels.ERROR)
    return
  end
  require("pi-ide.install.build").async(function(ok)
    -- A library that was missing can be loaded now (build.async let it be retried); a
    -- loaded one is kept until restart.
    if ok and not require("pi-ide.core.native").get() then
      require("pi-ide").autostart()
    end
  end, { source = opts.fargs[2] == "source" })
end

local function show_log()
  vim.cmd("botright split " .. vim.fn.fnameescape(require("pi-ide.core.log").path()))
  vim.bo.autoread = true
  vim.cmd("normal! G")
end

local function suggestion_stats()
  local suggest = require("pi-ide.features.suggest")
  local s = suggest.stats()
  local function ms(part)
    local v = s[part]
    return v.n > 0 and ("p50 %.0f ms, p95 %.0f ms"):format(v.p50, v.p95) or "no samples yet"
  end
  local rate = s.accept_rate and (" (%.0f%%)"):format(s.accept_rate * 100) or ""
  local lines = {
    ("pi-ide.nvim suggestions: %d requested, %d cancelled, %d shown, %d accepted%s, %d errors"):format(
      s.requests, s.cancelled, s.shown, s.accepted, rate, s.errors),
    "  keystroke -> ghost text: " .. ms("total"),
    "    debounce: " .. ms("debounce"),
    "    agent:    " .. ms("agent"),
    "    render:   " .. ms("render"),
    "  model: " .. (suggest.model() or "the agent's default"),
  }
  vim.api.nvim_echo({ { table.concat(lines, "\n") } }, false, {})
end

local function show_status()
  local chunks = {}
  for _, l in ipairs(require("pi-ide.core.status").lines()) do
    table.insert(chunks, { l .. "\n" })
  end
  vim.api.nvim_echo(chunks, false, {})
end

-- :PiIde send / add, then the agent's terminal when one runs here (terminal.focus_after_send).
local function mention(how)
  return function(opts)
    if require("pi-ide.features.mention")[how](opts) then
      require("pi-ide.features.terminal").after_send()
    end
  end
end

-- A subcommand that calls `fn` of module `mod` with the words after it joined (or not).
local function call(mod, fn, joined)
  return function(opts)
    local args = vim.list_slice(opts.fargs, 2)
    require(mod)[fn](joined and table.concat(args, " ") or args[1])
  end
end

M.subcommands = {
  start = { run = start },
  stop = { run = stop },
  restart = {
    run = function()
      require("pi-ide.core.server").stop()
      start()
    end,
  },
  status = { run = show_status },
  accept = { run = function() in_review("accept") end },
  reject = { run = function() in_review("reject") end },
  build = { run = build, complete = first_of({ "source" }) },
  log = { run = show_log },
  suggest = { run = function() require("pi-ide.features.suggest").trigger(true) end },
  toggle = { run = call("pi-ide.features.suggest", "toggle"), complete = first_of({ "buffer" }) },
  model = { run = function() require("pi-ide.features.models").pick() end },
  stats = { run = suggestion_stats },
  send = { run = mention("send_command") },
  add = { run = mention("add_command"), complete = files() },
  -- :PiIde open [agent] [args...]: the agent in a terminal, connected to this Neovim.
  open = {
    run = function(opts)
      require("pi-ide.features.terminal").open(opts.fargs[2], vim.list_slice(opts.fargs, 3))
    end,
    complete = function(arglead, n)
      return n == 1 and first_of(agent_names)(arglead, n) or files(true)(arglead, n)
    end,
  },
  close = { run = call("pi-ide.features.terminal", "close"), complete = first_of(agent_names) },
  -- The chat window (lua/pi-ide/features/chat/).
  chat = {
    run = function(opts)
      require("pi-ide.features.chat.command").run(opts.fargs[2], vim.list_slice(opts.fargs, 3))
    end,
    complete = first_of(chat_actions),
  },
  ask = { run = function(opts) require("pi-ide.features.chat.command").ask(opts) end },
  abort = { run = function() require("pi-ide.features.chat.front").call("abort") end },
  new = { run = function() require("pi-ide.features.chat").new() end },
  resume = {
    run = function()
      local front = require("pi-ide.features.chat.front").name()
      local acp = front ~= "pi" and require("pi-ide.features.chat.acp").get(front)
      if acp then
        return require("pi-ide.features.chat.acp.sessions").pick(acp)
      end
      require("pi-ide.features.chat.sessions").pick()
    end,
  },
  compact = { run = call("pi-ide.features.chat", "compact", true) },
  export = { run = call("pi-ide.features.chat", "export"), complete = files() },
  -- Checkpoints of agent turns (lua/pi-ide/features/checkpoints/).
  checkpoint = { run = function() require("pi-ide.features.checkpoints").checkpoint() end },
  changes = { run = call("pi-ide.features.checkpoints.changes", "run") },
  undo = { run = function(opts) require("pi-ide.features.checkpoints.undo").run(opts.bang) end },
}
-- And those an agent brings (its module says them: agents/<name>).
for name, entry in pairs(require("pi-ide.agents").commands()) do
  M.subcommands[name] = entry
end

--- The subcommands' names, sorted.
function M.names()
  local names = vim.tbl_keys(M.subcommands)
  table.sort(names)
  return names
end

function M.run(opts)
  local name = opts.fargs[1] or "status"
  -- `:PiIde undo!` as `:PiIde! undo`: the bang on the subcommand, where it reads naturally.
  if name:sub(-1) == "!" and M.subcommands[name:sub(1, -2)] then
    name, opts.bang = name:sub(1, -2), true
  end
  local sub = M.subcommands[name]
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
  local sub = M.subcommands[words[1]]
  -- The argument being typed is the last word (empty right after a space).
  return sub and sub.complete and sub.complete(arglead, #words - 1) or {}
end

return M
