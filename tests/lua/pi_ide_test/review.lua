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

--- The marks the review's hunks show in its proposal (tests/review/hunks.rs): the text of
--- each, first line (1-based) first: { line, text }.
function M.hunk_marks()
  local ns = vim.api.nvim_get_namespaces().pi_ide_hunk_marks
  local buf = vim.iter(vim.api.nvim_list_bufs()):find(function(b)
    return (vim.b[b].pi_ide_review or {}).pane == "proposal"
  end)
  local out = {}
  for _, m in ipairs(ns and buf and vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true }) or {}) do
    local chunks = m[4].virt_text or m[4].virt_lines[1]
    table.insert(out, { m[2] + 1, vim.trim(chunks[1][1]) })
  end
  return out
end

--- The proposal's lines, wherever the cursor is.
function M.proposal_lines()
  local buf = vim.iter(vim.api.nvim_list_bufs()):find(function(b)
    return (vim.b[b].pi_ide_review or {}).pane == "proposal"
  end)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

return M
