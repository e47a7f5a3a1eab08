-- An agent that writes its own proposal after a yes in its terminal, whatever its closeDiff is
-- answered (its module's `writes_own_proposal`): when the user had declined a hunk or edited
-- the proposal in our review, that is lost on its side. Said in one line; the write that
-- follows is a pending change (the close is no accept), decided again hunk by hunk.
local M = {}

-- "pi-ide.nvim: " and the rest of the line around the file's name.
local WORDS = "pi-ide.nvim: %s ignores your review of %s: its write is pending"

-- `name` cut from the start to `room` characters.
local function cut(name, room)
  local n = vim.fn.strchars(name)
  return n <= room and name or "…" .. vim.fn.strcharpart(name, n - room + 1)
end

--- Review `r` is closed by its agent (the user answered in its terminal): says so when the
--- agent will not write what the user left in it.
function M.closed(r)
  local agent = require("pi-ide.core.clients").kind_of(r.client)
  if not (agent and agent.writes_own_proposal) or not require("pi-ide.features.review.declined").note(r) then
    return
  end
  local name = require("pi-ide.features.review.winbar").display_name(r.path)
  local width = math.min(80, vim.v.echospace > 0 and vim.v.echospace or 80) - 1
  local room = math.max(12, width - vim.fn.strchars(WORDS:format(agent.short, "")))
  local msg = WORDS:format(agent.short, cut(name, room)):sub(#"pi-ide.nvim: " + 1)
  require("pi-ide.core.log").notify(msg, vim.log.levels.WARN)
end

return M
