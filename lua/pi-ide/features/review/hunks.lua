-- A review's hunks, decided one by one: computed once when the review opens (the proposal as
-- its agent sent it against the file on the left), followed through the user's edits with
-- extmarks in the proposal. Rejecting a hunk puts the file's lines back in the proposal,
-- accepting it again the proposal's; what `:w` then sends is the buffer, as for any edit.
-- A hunk's state is read from its lines, never stored: "kept" (the proposal's), "rejected"
-- (the file's) or "edited" (neither: the user typed in or right beside it, which is never
-- overwritten; undo brings the state back with the lines). A final newline the proposal adds
-- or removes goes with the hunk that ends the file (with_final_newline).
local load = require("pi-ide.features.review.load")

local M = {}

local ns = vim.api.nvim_create_namespace("pi_ide_hunks") -- where each hunk is in the proposal
local marks = vim.api.nvim_create_namespace("pi_ide_hunk_marks") -- what the user sees

vim.api.nvim_set_hl(0, "PiIdeHunkRejected", { link = "DiagnosticWarn", default = true })
vim.api.nvim_set_hl(0, "PiIdeHunkEdited", { link = "DiagnosticInfo", default = true })

-- (Re)places hunk `h`'s extmark over rows [row, row + count). The start stays left of text
-- put at it and the end moves right, so that lines put exactly there belong to the hunk.
local function place(buf, h, row, count)
  h.mark = vim.api.nvim_buf_set_extmark(buf, ns, row, 0, {
    id = h.mark,
    end_row = row + count,
    end_col = 0,
    right_gravity = false,
    end_right_gravity = true,
  })
end

-- The final newline, when the proposal adds or removes it, is decided with the hunk that ends
-- the file, or on its own on the last line when no hunk does (its lines are the same on both
-- sides): `h.eol` = { file = bool, proposal = bool }, the proposal's 'eol' and 'fixeol'.
local function with_final_newline(list, left, right)
  local eol = { file = vim.bo[left].eol, proposal = vim.bo[right].eol }
  local old_count, new_count = vim.api.nvim_buf_line_count(left), vim.api.nvim_buf_line_count(right)
  if eol.file == eol.proposal or #load.lines(left) == 0 or #load.lines(right) == 0 then
    return
  end
  local last = list[#list]
  if last and last.left_row + last.left_count == old_count and last.new_end == new_count then
    last.eol = eol
    return
  end
  local h = {
    file = vim.api.nvim_buf_get_lines(left, old_count - 1, old_count, false),
    proposal = vim.api.nvim_buf_get_lines(right, new_count - 1, new_count, false),
    left_row = old_count - 1,
    left_count = 1,
    new_start = new_count - 1,
    new_end = new_count,
    eol = eol,
  }
  place(right, h, new_count - 1, 1)
  table.insert(list, h)
end

--- Follows the hunks of review `r` from the core's count of its changes (`review_stats`, on a
--- worker: no diff of the whole file on the main thread): `[new_start, new_len, old_start,
--- old_len]`, zero-based, the proposal as its agent sent it against the file on disk. Called
--- when the proposal buffer is made and when the count arrives, whichever is last; a proposal
--- the user edited before the count arrived gets no hunks (positions would be guesses).
function M.track(r, left, right)
  if r.hunks or not (r.stats and left and right and vim.api.nvim_buf_is_valid(right)) then
    return
  end
  if vim.api.nvim_buf_get_changedtick(right) ~= r.proposal_tick then
    r.hunks = { list = {}, buf = right, decided = false, unavailable = true }
    return
  end
  local list = {}
  for _, c in ipairs(r.stats.hunks or {}) do
    local new_start, new_len, old_start, old_len = c[1], c[2], c[3], c[4]
    local h = {
      file = vim.api.nvim_buf_get_lines(left, old_start, old_start + old_len, false),
      proposal = vim.api.nvim_buf_get_lines(right, new_start, new_start + new_len, false),
      left_row = old_start,
      left_count = old_len,
      new_start = new_start, -- where it was in the proposal as its agent sent it
      new_end = new_start + new_len,
    }
    place(right, h, new_start, new_len)
    table.insert(list, h)
  end
  if r.old.exists and not r.old_error then
    with_final_newline(list, left, right)
  end
  r.hunks = { list = list, buf = right, decided = false }
  require("pi-ide.features.review.overlap").mark(r, left, right)
  -- A review of the same name taken over: the user's decisions on unchanged hunks come along.
  require("pi-ide.features.review.carry").apply(r)
end

-- Rows [first, last) hunk `h` covers in the proposal now.
local function span(hunks, h)
  local m = vim.api.nvim_buf_get_extmark_by_id(hunks.buf, ns, h.mark, { details = true })
  return m[1], m[3].end_row
end

local function same(a, b)
  return vim.deep_equal(a, b)
end

-- What the proposal's lines are where hunk `h` is: "kept", "rejected" or "edited".
local function lines_state(hunks, h)
  local first, last = span(hunks, h)
  local lines = vim.api.nvim_buf_get_lines(hunks.buf, first, last, false)
  local kept, rejected = same(lines, h.proposal), same(lines, h.file)
  if h.eol and (kept or rejected) then
    return "either" -- the final newline says
  end
  return kept and "kept" or rejected and "rejected" or "edited"
end

local function set_eol(buf, on)
  vim.bo[buf].eol, vim.bo[buf].fixeol = on, on
end

--- "kept", "rejected" or "edited": what the proposal holds where hunk `h` is.
function M.state(hunks, h)
  local now = lines_state(hunks, h)
  if now ~= "either" then
    return now
  end
  local first, last = span(hunks, h)
  local lines = vim.api.nvim_buf_get_lines(hunks.buf, first, last, false)
  local eol = vim.bo[hunks.buf].eol
  if same(lines, h.proposal) and eol == h.eol.proposal then
    return "kept"
  elseif same(lines, h.file) and eol == h.eol.file then
    return "rejected"
  end
  return "edited"
end

-- The hunk at 0-based `row` of the pane showing `buf`: the one whose lines hold it, else one
-- with no lines right there (Neovim shows those as filler lines under the line before).
function M.at(r, buf, row)
  local hunks = r.hunks
  local in_proposal = buf == hunks.buf
  local near
  for _, h in ipairs(hunks.list) do
    local first, last
    if in_proposal then
      first, last = span(hunks, h)
    else
      first, last = h.left_row, h.left_row + h.left_count
    end
    if row >= first and row < last then
      return h
    elseif first == last and (row == first or row == first - 1) then
      near = near or h
    end
  end
  return near
end

--- Row (0-based) to put the cursor on for hunk `h` in the pane showing `buf`.
function M.row_of(r, buf, h)
  local first, last
  if buf == r.hunks.buf then
    first, last = span(r.hunks, h)
  else
    first, last = h.left_row, h.left_row + h.left_count
  end
  if first == last then
    first = first - 1 -- its filler lines are under the line before
  end
  local count = vim.api.nvim_buf_line_count(buf)
  return math.max(0, math.min(first, count - 1))
end

--- Puts the file's lines (`to` = "rejected") or the proposal's (`to` = "kept") where hunk `h`
--- is. Returns nil, or why not: "edited" (the user's typing there is never overwritten).
function M.set(r, h, to)
  local hunks = r.hunks
  local now = M.state(hunks, h)
  hunks.decided = true
  if now == to then
    return nil
  elseif lines_state(hunks, h) == "edited" then
    return "edited"
  end
  local lines = to == "rejected" and h.file or h.proposal
  local first, last = span(hunks, h)
  vim.api.nvim_buf_set_lines(hunks.buf, first, last, false, lines)
  place(hunks.buf, h, first, #lines)
  if h.eol then
    set_eol(hunks.buf, h.eol[to == "rejected" and "file" or "proposal"])
  end
  return nil
end

--- The proposal's lines where hunk `h` is now.
function M.lines(hunks, h)
  local first, last = span(hunks, h)
  return vim.api.nvim_buf_get_lines(hunks.buf, first, last, false)
end

--- Puts `lines` (the user's own, carried from a review taken over: carry.lua) where hunk `h`
--- is. False when the user typed there already (never overwritten).
function M.replace(r, h, lines)
  local hunks = r.hunks
  if lines_state(hunks, h) ~= "kept" then
    return false
  end
  local first, last = span(hunks, h)
  vim.api.nvim_buf_set_lines(hunks.buf, first, last, false, lines)
  place(hunks.buf, h, first, #lines)
  hunks.decided = true
  return true
end

-- The final newline follows the lines of the hunk that ends the file (an undo brings its lines
-- back, not the option).
local function follow_final_newline(hunks)
  local h = hunks.list[#hunks.list]
  if not (h and h.eol) or same(h.proposal, h.file) then
    return
  end
  local first, last = span(hunks, h)
  local lines = vim.api.nvim_buf_get_lines(hunks.buf, first, last, false)
  if same(lines, h.proposal) or same(lines, h.file) then
    set_eol(hunks.buf, h.eol[same(lines, h.proposal) and "proposal" or "file"])
  end
end

--- Counts for the winbar once a hunk was decided: kept, total; nil before.
function M.counts(r)
  local hunks = r.hunks
  if not (hunks and hunks.decided) or not vim.api.nvim_buf_is_valid(hunks.buf) then
    return nil
  end
  local kept = 0
  for _, h in ipairs(hunks.list) do
    if M.state(hunks, h) == "kept" then
      kept = kept + 1
    end
  end
  return kept, #hunks.list
end

--- Every hunk rejected: the proposal holds the file's lines, nothing of the agent's is left.
function M.all_rejected(r)
  local hunks = r.hunks
  if not (hunks and hunks.decided and #hunks.list > 0) then
    return false
  end
  for _, h in ipairs(hunks.list) do
    if M.state(hunks, h) ~= "rejected" then
      return false
    end
  end
  return same(load.lines(hunks.buf), load.lines(r.ui.left_buf))
end

-- The mark a hunk not kept shows: on its first line, or for one with no lines left, above the
-- line after it (below the last line at the end).
local function show_mark(buf, first, last, state, what)
  local hl = state == "rejected" and "PiIdeHunkRejected" or "PiIdeHunkEdited"
  local sign = state == "rejected" and "✗" or "✎"
  local text = sign .. " " .. state .. (what or "")
  local count = vim.api.nvim_buf_line_count(buf)
  if first < last then
    -- At the line's end, no sign: a sign column appearing would shift the pane's text.
    vim.api.nvim_buf_set_extmark(buf, marks, first, 0, { virt_text = { { "  " .. text, hl } } })
  else
    local above = first < count
    vim.api.nvim_buf_set_extmark(buf, marks, above and first or count - 1, 0, {
      virt_lines = { { { "  " .. text .. " (its lines are removed)", hl } } },
      virt_lines_above = above,
    })
  end
end

--- Redraws the marks of the hunks not kept (only once one was decided: nothing changes for
--- a user who never decides a hunk).
function M.show(r)
  local hunks = r.hunks
  if not (hunks and hunks.decided) or not vim.api.nvim_buf_is_valid(hunks.buf) then
    return
  end
  follow_final_newline(hunks)
  vim.api.nvim_buf_clear_namespace(hunks.buf, marks, 0, -1)
  for _, h in ipairs(hunks.list) do
    local state = M.state(hunks, h)
    if state ~= "kept" then
      local first, last = span(hunks, h)
      show_mark(hunks.buf, first, last, state, h.eol and same(h.proposal, h.file) and " (the final newline)" or nil)
    end
  end
end

return M
