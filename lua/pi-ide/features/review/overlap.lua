-- Hunks that overlap the user's unsaved edits of the file. The review is against the file on
-- disk (its left pane); the user's buffer of the file, modified, is never touched by it: after
-- an accept the agent writes the file and the buffer keeps the edits (reload.lua says so, and
-- :w or :e! is then the user's call). A hunk where the user has edited too is where the two
-- will clash: it is marked in the proposal ("⚠ overlaps your unsaved edits") and counted in
-- the winbar, when the review's hunks are placed. The user's edits are found with vim.diff of
-- the buffer against the disk's text, on the main thread, up to MAX_BYTES (larger: said, not
-- looked for).
local M = {}

local ns = vim.api.nvim_create_namespace("pi_ide_hunk_overlap")
local MAX_BYTES = 2 * 1024 * 1024

local function text(lines)
  return table.concat(lines, "\n") .. "\n"
end

-- Rows [lo, hi) overlap; an empty one (lo == hi: lines inserted there) touches the rows
-- around it.
local function touch(lo1, hi1, lo2, hi2)
  if lo1 == hi1 or lo2 == hi2 then
    return lo1 <= hi2 and lo2 <= hi1
  end
  return lo1 < hi2 and lo2 < hi1
end

-- The user's edits as rows of the disk's text: { lo, hi } (0-based, end excluded); nil when
-- too large to look.
local function edits(disk, mine)
  local a, b = text(disk), text(mine)
  if #a > MAX_BYTES or #b > MAX_BYTES then
    return nil
  end
  return vim.tbl_map(function(h)
    local lo = h[2] > 0 and h[1] - 1 or h[1]
    return { lo, lo + h[2] }
  end, vim.diff(a, b, { result_type = "indices" }))
end

--- Marks the hunks of review `r` (placed in proposal `right` against disk pane `left`) that
--- overlap the user's unsaved edits of the file; r.overlap_note says which, for the winbar.
function M.mark(r, left, right)
  local buf = r.user_edits and require("pi-ide.core.buffers").find(r.path)
  if not (buf and vim.api.nvim_buf_is_loaded(buf)) then
    return
  end
  local found = edits(vim.api.nvim_buf_get_lines(left, 0, -1, false), vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  if not found then
    r.overlap_note = "; too large to say which hunks overlap them"
    return
  end
  local which = {}
  for i, h in ipairs(r.hunks.list) do
    for _, e in ipairs(found) do
      if touch(h.left_row, h.left_row + h.left_count, e[1], e[2]) then
        table.insert(which, i)
        local row = require("pi-ide.features.review.hunks").row_of(r, right, h)
        local hl = "DiagnosticWarn"
        vim.api.nvim_buf_set_extmark(right, ns, row, 0, { virt_text = { { "  ⚠ overlaps your unsaved edits", hl } } })
        break
      end
    end
  end
  if #which > 0 then
    r.overlap_note = ("; hunk%s %s overlap%s them"):format(#which == 1 and "" or "s", table.concat(which, ", "), #which == 1 and "s" or "")
  end
end

return M
