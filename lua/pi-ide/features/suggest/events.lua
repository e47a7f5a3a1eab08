-- The autocmds behind suggestions. Registered when the server starts; the suggestion machinery
-- itself (suggest/init.lua) is loaded on the first keystroke in Insert mode, not before: until
-- then there is nothing to clear or redraw.
local log = require("pi-ide.core.log")

local M = {}

local augroup

local function loaded()
  return package.loaded["pi-ide.features.suggest"]
end

--- Insert mode proper (not Replace, not a completion submode's neighbours).
function M.in_insert_mode()
  local m = vim.api.nvim_get_mode().mode
  return m == "i" or m == "ic" or m == "ix"
end

function M.attach()
  local ghost = require("pi-ide.features.suggest.ghost")
  ghost.define_highlights()
  augroup = vim.api.nvim_create_augroup("PiIdeSuggest", { clear = true })
  local au = function(events, cb, opts)
    local what = "suggestions (" .. table.concat(type(events) == "table" and events or { events }, ", ") .. ")"
    vim.api.nvim_create_autocmd(events, vim.tbl_extend("force", { group = augroup, callback = log.guard(what, cb) }, opts or {}))
  end
  au("TextChangedI", function()
    require("pi-ide.features.suggest").on_text_changed()
  end)
  au("CursorMovedI", function()
    local s = loaded()
    if s then
      s.on_cursor_moved()
    end
  end)
  local function clear()
    local s = loaded()
    if s then
      s.clear()
    end
  end
  au({ "InsertLeave", "BufLeave", "WinLeave" }, clear)
  -- <C-c> leaves Insert mode without InsertLeave; ModeChanged still sees it.
  au("ModeChanged", function()
    if not M.in_insert_mode() then
      clear()
    end
  end, { pattern = "i*:*" })
  local function render_later()
    local s = loaded()
    if s then
      s.render_later()
    end
  end
  au({ "CompleteChanged", "CompleteDone" }, render_later)
  au("User", render_later, { pattern = { "BlinkCmpMenuOpen", "BlinkCmpMenuClose", "CmpMenuOpened", "CmpMenuClosed" } })
  au("ColorScheme", ghost.define_highlights)
  require("pi-ide.features.suggest.keys").apply()
end

--- The server stops: what is shown goes, and the autocmds with it.
function M.detach()
  local s = loaded()
  if s then
    s.clear()
  end
  if augroup then
    pcall(vim.api.nvim_del_augroup_by_id, augroup)
    augroup = nil
  end
end

return M
