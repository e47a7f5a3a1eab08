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

--- What the inline review draws on the current buffer (tests/review/inline.rs), first line
--- first: { line (1-based), what }: "removed", or a virtual line's text (without its gutter and
--- padding; "^" before it when it is drawn above the line).
function M.inline_marks()
  local ns = vim.api.nvim_get_namespaces().pi_ide_inline
  local out = {}
  for _, m in ipairs(ns and vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true }) or {}) do
    local d = m[4]
    if d.line_hl_group then
      table.insert(out, { m[2] + 1, "removed" })
    end
    for _, chunks in ipairs(d.virt_lines or {}) do
      local text = table.concat(vim.tbl_map(function(c)
        return c[1]
      end, chunks))
      table.insert(out, { m[2] + 1, (d.virt_lines_above and "^" or "") .. vim.trim(text) })
    end
  end
  return out
end

--- What the inline review must never change in the current buffer, and that no window is in
--- diff mode: { changedtick, modified, last undo step, windows in diff mode }.
function M.inline_untouched()
  local diffs = vim.tbl_filter(function(w)
    return vim.wo[w].diff
  end, vim.api.nvim_list_wins())
  return { vim.b.changedtick, vim.bo.modified, vim.fn.undotree().seq_last, #diffs }
end

--- Whether a typed accept would count now: outside a review, or in one that has been on screen
--- long enough to be seen (review.seen_ms) or that the user came to.
function M.takes_accept()
  local review = require("pi-ide.features.review")
  return review.current() == nil or review.armed()
end

return M
