-- :PiIde <subcommand>. With no subcommand it shows the status.
local M = {}

local function ago(t)
  local s = os.time() - t
  if s < 60 then
    return s .. "s ago"
  elseif s < 3600 then
    return math.floor(s / 60) .. "m ago"
  end
  return ("%dh%02dm ago"):format(math.floor(s / 3600), math.floor(s % 3600 / 60))
end

--- The status as lines of text (also used by tests and :checkhealth).
function M.status_lines()
  local st = require("pi-ide.core.server").status()
  if not st.running then
    return { "pi-ide.nvim: not running (start it with :PiIde start)" }
  end
  local lines = {
    ("pi-ide.nvim: running on 127.0.0.1:%d as %q"):format(st.port, st.ide_name),
    "  lockfile: " .. st.lockfile,
  }
  for _, agent in ipairs(require("pi-ide.agents").all()) do
    if agent.status_line then
      table.insert(lines, agent.status_line(st))
    end
  end
  vim.list_extend(lines, {
    "  workspace folders: " .. table.concat(st.workspace_folders, ", "),
    ("  clients: %d"):format(#st.clients),
  })
  for _, c in ipairs(st.clients) do
    table.insert(
      lines,
      ("    #%d %s%s%s, connected %s (%s), %d parked"):format(
        c.id,
        c.name or "(not initialized)",
        c.version and (" " .. c.version) or "",
        c.session_name and (" session %q"):format(c.session_name) or "",
        os.date("%H:%M:%S", c.connected_at),
        ago(c.connected_at),
        c.parked
      )
    )
  end
  table.insert(lines, ("  parked requests: %d"):format(st.parked))
  local target
  for _, c in ipairs(st.clients) do
    if c.id == st.request_target then
      target = ("#%d %s"):format(c.id, c.name or "")
    end
  end
  table.insert(
    lines,
    ("  suggestions from: %s (the client that initialized last), %d in flight"):format(target or "no client", st.requests_in_flight)
  )
  local open = require("pi-ide.features.review").list()
  table.insert(lines, ("  open reviews: %d"):format(#open))
  for _, r in ipairs(open) do
    table.insert(lines, ("    %s  %s"):format(r.tab_name, vim.fn.fnamemodify(r.path, ":~:.")))
  end
  local terminals = package.loaded["pi-ide.features.terminal"] and package.loaded["pi-ide.features.terminal"].summary() or {}
  if #terminals > 0 then
    table.insert(lines, "  agents launched here: " .. table.concat(terminals, ", "))
  end
  table.insert(lines, "  log: " .. require("pi-ide.core.log").path())
  return lines
end

-- :PiIde accept / reject act on the review the user is in.
local function in_review(action)
  local diff = require("pi-ide.features.review")
  local r = diff.current()
  if r then
    diff[action](r)
  else
    vim.notify(("pi-ide.nvim: not in a review (open reviews: %d)"):format(#diff.list()), vim.log.levels.WARN)
  end
end

M.subcommands = {
  start = function()
    local server = require("pi-ide.core.server")
    if server.running() then
      vim.notify("pi-ide.nvim: already running", vim.log.levels.INFO)
    elseif server.start() then
      local st = server.status()
      vim.notify(("pi-ide.nvim: listening on port %d (lockfile %s)"):format(st.port, st.lockfile), vim.log.levels.INFO)
    end
  end,
  stop = function()
    if require("pi-ide.core.server").stop() then
      vim.notify("pi-ide.nvim: stopped", vim.log.levels.INFO)
    else
      vim.notify("pi-ide.nvim: not running", vim.log.levels.INFO)
    end
  end,
  restart = function()
    require("pi-ide.core.server").stop()
    M.subcommands.start()
  end,
  accept = function()
    in_review("accept")
  end,
  reject = function()
    in_review("reject")
  end,
  -- :PiIde build [source]: the release's prebuilt library when at a release tag, else cargo.
  build = function(opts)
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
  end,
  log = function()
    local path = require("pi-ide.core.log").path()
    vim.cmd("botright split " .. vim.fn.fnameescape(path))
    vim.bo.autoread = true
    vim.cmd("normal! G")
  end,
  suggest = function()
    require("pi-ide.features.suggest").trigger(true)
  end,
  toggle = function(opts)
    require("pi-ide.features.suggest").toggle(opts.fargs[2])
  end,
  model = function()
    require("pi-ide.features.models").pick()
  end,
  stats = function()
    local s = require("pi-ide.features.suggest").stats()
    local function ms(part)
      local v = s[part]
      return v.n > 0 and ("p50 %.0f ms, p95 %.0f ms"):format(v.p50, v.p95) or "no samples yet"
    end
    local lines = {
      ("pi-ide.nvim suggestions: %d requested, %d cancelled, %d shown, %d accepted%s, %d errors"):format(
        s.requests,
        s.cancelled,
        s.shown,
        s.accepted,
        s.accept_rate and (" (%.0f%%)"):format(s.accept_rate * 100) or "",
        s.errors
      ),
      "  keystroke -> ghost text: " .. ms("total"),
      "    debounce: " .. ms("debounce"),
      "    agent:    " .. ms("agent"),
      "    render:   " .. ms("render"),
      "  model: " .. (require("pi-ide.features.suggest").model() or "the agent's default"),
    }
    vim.api.nvim_echo({ { table.concat(lines, "\n") } }, false, {})
  end,
  send = function(opts)
    if require("pi-ide.features.mention").send_command(opts) then
      require("pi-ide.features.terminal").after_send()
    end
  end,
  add = function(opts)
    if require("pi-ide.features.mention").add_command(opts) then
      require("pi-ide.features.terminal").after_send()
    end
  end,
  -- :PiIde open [agent] [args...]: the agent in a terminal, connected to this Neovim.
  open = function(opts)
    require("pi-ide.features.terminal").open(opts.fargs[2], vim.list_slice(opts.fargs, 3))
  end,
  close = function(opts)
    require("pi-ide.features.terminal").close(opts.fargs[2])
  end,
  -- The chat window driving Pi in RPC mode (lua/pi-ide/chat/).
  chat = function(opts)
    require("pi-ide.features.chat.command").run(opts.fargs[2], vim.list_slice(opts.fargs, 3))
  end,
  ask = function(opts)
    require("pi-ide.features.chat.command").ask(opts)
  end,
  abort = function()
    require("pi-ide.features.chat").abort()
  end,
  new = function()
    require("pi-ide.features.chat").new()
  end,
  resume = function()
    require("pi-ide.features.chat.sessions").pick()
  end,
  compact = function(opts)
    require("pi-ide.features.chat").compact(table.concat(vim.list_slice(opts.fargs, 2), " "))
  end,
  export = function(opts)
    require("pi-ide.features.chat").export(opts.fargs[2])
  end,
  status = function()
    local chunks = {}
    for _, l in ipairs(M.status_lines()) do
      table.insert(chunks, { l .. "\n" })
    end
    vim.api.nvim_echo(chunks, false, {})
  end,
}

function M.run(opts)
  local name = opts.fargs[1] or "status"
  local fn = M.subcommands[name]
  if not fn then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    vim.notify(
      ("pi-ide.nvim: unknown subcommand '%s' (try: %s)"):format(name, table.concat(names, ", ")),
      vim.log.levels.ERROR
    )
    return
  end
  fn(opts)
end

function M.complete(arglead, cmdline)
  -- After "add", complete file names; after "toggle", "buffer"; after "build", "source";
  -- others take no arguments.
  local sub = cmdline:match("^%A*%a+%s+(%S+)%s")
  local second = cmdline:match("^%A*%a+%s+%S+%s+%S+%s")
  if sub == "add" and not second then
    return vim.fn.getcompletion(arglead, "file")
  elseif (sub == "open" or sub == "close") and not second then
    return vim.tbl_filter(function(w)
      return w:sub(1, #arglead) == arglead
    end, require("pi-ide.agents").names)
  elseif sub == "open" then
    return vim.fn.getcompletion(arglead, "file")
  elseif sub == "chat" and not second then
    return vim.tbl_filter(function(w)
      return w:sub(1, #arglead) == arglead
    end, require("pi-ide.features.chat.command").names)
  elseif sub == "export" and not second then
    return vim.fn.getcompletion(arglead, "file")
  elseif (sub == "toggle" or sub == "build") and not second then
    return vim.tbl_filter(function(w)
      return w:sub(1, #arglead) == arglead
    end, { sub == "toggle" and "buffer" or "source" })
  elseif sub then
    return {}
  end
  local out = {}
  for name in pairs(M.subcommands) do
    if name:sub(1, #arglead) == arglead then
      table.insert(out, name)
    end
  end
  table.sort(out)
  return out
end

return M
