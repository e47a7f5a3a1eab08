-- pi-ide.nvim: the editor side of the pi-ide protocol. `require("pi-ide").setup(opts)` is
-- optional; with no configuration the server starts when Neovim does.
require("pi-ide.wiring")

local M = {}

-- setup()'s work: the options checked and taken, and a running server told.
local function configure(opts)
  local config = require("pi-ide.core.config")
  local before = vim.deepcopy(config.values)
  config.setup(opts)
  local server = require("pi-ide.core.server")
  if server.running() then
    require("pi-ide.core.log").set_level(config.values.log_level)
    require("pi-ide.features.suggest.keys").apply()
    server.configure()
    server.apply_start_options(before)
  end
end

--- Applies options (see :help pi-ide-options). Unknown or ill-typed keys are named in an error
--- message and ignored.
---@param opts? PiIde.Config
function M.setup(opts)
  require("pi-ide.core.gc").eager(configure, opts)
end

--- Gets the Rust core for this checkout, for a plugin manager's hook (vim.pack's PackChanged,
--- rocks.nvim's RocksInstallPost): the release's prebuilt library at a release tag (SHA-256
--- verified), else `cargo build --release`, else one message saying what to install. Waits and
--- returns `ok, message` (the user is told too); with `on_done(ok, message)`, in the background.
---@param opts? { source?: boolean } `source = true`: build with cargo, no download
---@param on_done? fun(ok: boolean, message: string)
---@return boolean? ok, string? message
function M.build(opts, on_done)
  return require("pi-ide.install.build").build(opts, on_done)
end

function M.start()
  return require("pi-ide.core.server").start()
end

function M.stop()
  return require("pi-ide.core.server").stop()
end

--- A table describing the server (running, port, lockfile, clients, parked, ...).
---@return table
function M.info()
  local info = require("pi-ide.core.server").status()
  -- What agents wrote by themselves, not decided yet (features/pending/).
  info.pending = require("pi-ide.features.pending").list()
  return info
end

--- A short text for the statusline: "" when the server is off, else the agent connected (or
--- "no agent"), reviews waiting, and "…" while a suggestion is being asked for. One short lock
--- in the core (which agent) and Lua-side counts: cheap enough for every redraw.
function M.status()
  local server = package.loaded["pi-ide.core.server"]
  local front = package.loaded["pi-ide.features.chat.front"]
  -- The chat in front: "π working", "<agent> waiting for you", … (nothing when idle).
  local chat_state = front and front.status() or ""
  -- A turn changed files that no review showed (features/checkpoints/).
  local checkpoints = package.loaded["pi-ide.features.checkpoints"]
  local unseen = checkpoints and checkpoints.status() or ""
  -- Changes agents made by themselves, to keep or undo (features/pending/): said before those.
  local pending = package.loaded["pi-ide.features.pending"]
  local to_decide = pending and pending.status() or ""
  if to_decide ~= "" then
    unseen = unseen ~= "" and (to_decide .. " · " .. unseen) or to_decide
  end
  if not server or not server.running() then
    return table.concat(vim.tbl_filter(function(p)
      return p ~= ""
    end, { chat_state, unseen }), " · ")
  end
  local parts = { "π " .. (require("pi-ide.core.clients").summary() or "no agent") }
  if chat_state ~= "" then
    parts[1] = chat_state
  end
  local review = package.loaded["pi-ide.features.review"]
  -- Only reviews on screen count as "to review": `:PiIde reject` must find what the status
  -- promises. One that is not shown yet (held while you type) is "waiting".
  local shown, waiting, unvisited = 0, 0, 0
  if review then
    shown, waiting, unvisited = review.count()
  end
  if shown > 0 then
    -- One that opened while the user typed did not take the focus: how to go to it.
    table.insert(parts, ("%d to review%s"):format(shown, unvisited > 0 and " (:PiIde review)" or ""))
  end
  if waiting > 0 then
    table.insert(parts, ("%d waiting"):format(waiting))
  end
  local suggest = package.loaded["pi-ide.features.suggest"]
  if suggest and suggest.busy() then
    table.insert(parts, "…")
  end
  if unseen ~= "" then
    table.insert(parts, unseen)
  end
  return table.concat(parts, " · ")
end

--- Accepts the suggestion shown as ghost text, if there is one. Returns true when it accepted
--- (for your own <Tab> logic, e.g. LazyVim's `ai_accept` action), false when nothing is shown.
--- Safe from an <expr> mapping (blink.cmp's keymaps): the text is then inserted right after.
---@return boolean accepted
function M.accept()
  local suggest = package.loaded["pi-ide.features.suggest"]
  if not suggest or not suggest.visible() then
    return false
  end
  -- Inside an <expr> mapping the text is locked (E565); a harmless probe tells.
  if not pcall(vim.api.nvim_set_current_win, vim.api.nvim_get_current_win()) then
    vim.schedule(function()
      suggest.accept("all")
    end)
    return true
  end
  return suggest.accept("all")
end

--- Called by plugin/pi-ide.lua once Neovim has started.
function M.autostart()
  if require("pi-ide.core.config").values.auto_start and not require("pi-ide.core.server").running() then
    M.start()
  end
end

return M
