-- What an agent is told when the user accepted only part of its proposal: the hunks declined or
-- edited, by their lines in its proposal (hunks.lua knows each hunk's state). The core sends it
-- with the accept to the agents the accepted text does not reach in the answer: those that
-- write their own proposal (the file is then set to the accepted text) and those we write for.
local hunks = require("pi-ide.features.review.hunks")

local M = {}

--- "line 4" or "lines 4-6": `count` lines from `first` (1-based), in an agent's words.
function M.lines(first, count)
  return count == 1 and ("line %d"):format(first) or ("lines %d-%d"):format(first, first + count - 1)
end
local lines = M.lines

-- Where hunk `h` is, in the agent's words: its lines in the proposal, or the file's lines it
-- removed.
local function where(h)
  if h.eol and vim.deep_equal(h.file, h.proposal) then
    return h.eol.proposal and "the final newline you added" or "your removal of the final newline"
  elseif #h.proposal > 0 then
    return "your " .. lines(h.new_start + 1, #h.proposal)
  end
  return "your removal of the file's " .. lines(h.left_row + 1, h.left_count)
end

local SAID = { rejected = "was declined (the file keeps its own text there)", edited = "was edited by the user" }

--- The note for review `r`'s accept, or nil when the user kept the proposal as it came.
function M.note(r)
  local list = r.hunks and not r.hunks.unavailable and r.hunks.list or {}
  local said = {}
  for i, h in ipairs(list) do
    local state = hunks.state(r.hunks, h)
    if SAID[state] then
      table.insert(said, ("hunk %d of %d (%s) %s"):format(i, #list, where(h), SAID[state]))
    end
  end
  if #said > 0 then
    return table.concat(said, "; ")
  end
  local right = r.ui and r.ui.right_buf
  if right and vim.api.nvim_buf_is_valid(right) and vim.api.nvim_buf_get_changedtick(right) ~= r.proposal_tick then
    return "the user edited it by hand"
  end
end

return M
