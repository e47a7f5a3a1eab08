-- What tests/review/ asks of Neovim, by name (see tests/lua/pi_ide_test.lua).
local M = {}

--- The review's panes are not files, for Neovim and for the plugin, whatever their 'buftype'
--- becomes: the proposal's and the left pane's 'buftype', whether the plugin takes each for a
--- file, and whether it takes the left pane for one once its 'buftype' is cleared.
function M.pane_kinds()
  local l = vim.fn.winbufnr(vim.fn.winnr("h"))
  local is_file = require("pi-ide.core.buffers").is_file
  local kinds = { vim.bo.buftype, vim.bo[l].buftype, is_file(0), is_file(l) }
  vim.bo[l].buftype = ""
  table.insert(kinds, is_file(l))
  vim.bo[l].buftype = "nofile"
  return kinds
end

return M
