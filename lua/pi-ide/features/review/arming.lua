-- When a typed accept counts. A review must never take a key the user aimed elsewhere: one that
-- opens under their fingers (they were typing a moment ago, or it waited for them to leave
-- Insert mode) opens without taking the focus, and says where it is; one that opens while they
-- are idle takes the focus, but an accept (`:w`, ZZ, the save key, the accept key) begun less
-- than `review.seen_ms` after it appeared was planned before they could see it, and does
-- nothing. Their own move into a review (`gt`, a window command, :PiIde review) is deliberate:
-- it counts at once.
local config = require("pi-ide.core.config")
local typing = require("pi-ide.core.typing")

local M = {}

-- A key this recent means the user is at work: a review opening now would take the next ones.
M.BUSY_MS = 500

-- When the command line under way was begun (its `:`), until it has run.
local began
local tracking
local function track()
  if tracking then
    return
  end
  tracking = vim.api.nvim_create_augroup("PiIdeReviewArming", { clear = true })
  vim.api.nvim_create_autocmd("CmdlineEnter", {
    group = tracking,
    callback = function()
      began = vim.uv.now()
    end,
  })
  vim.api.nvim_create_autocmd("CmdlineLeave", {
    group = tracking,
    callback = function()
      -- The command runs before the next turn of the loop.
      vim.schedule(function()
        began = nil
      end)
    end,
  })
end

--- Whether review `r`, about to open, may take the focus: the user asked for it (`r.asked`), or
--- is not at work in a buffer of theirs (it did not wait for them to leave a mode there, and
--- no key came there in the last BUSY_MS). Keys typed in a review, a chat or an agent's
--- terminal talk with agents: what an agent sends next is the answer they wait for.
function M.takes_focus(r)
  track()
  return r.asked or not ((r.waited or typing.within(M.BUSY_MS)) and typing.last_key_was_theirs())
end

--- Review `r` is on screen: with the focus (`focused`), its accepts count once it has been seen;
--- without, once the user comes to it.
function M.opened(r, focused)
  track()
  r.quiet = not focused
  if r.asked then
    r.armed_at = vim.uv.now()
  elseif focused then
    r.armed_at = vim.uv.now() + config.values.review.seen_ms
  end
end

--- The user moved into review `r` themselves.
function M.came(r)
  local now = vim.uv.now()
  r.quiet = false
  r.armed_at = math.min(r.armed_at or now, now)
end

--- Whether a typed accept of review `r` counts now; when not, says why in one line.
function M.allows(r)
  local at = began or vim.uv.now()
  if r.armed_at and at >= r.armed_at then
    return true
  end
  local name = vim.fn.fnamemodify(r.path, ":t")
  local why = r.armed_at and "it had only just opened" or "you have not gone to it yet"
  vim.notify(("pi-ide.nvim: %s not accepted: %s; accept again to accept"):format(name, why), vim.log.levels.WARN)
  return false
end

--- Whether review `r` takes typed accepts now (for :PiIde status and tests).
function M.armed(r)
  return r.armed_at ~= nil and vim.uv.now() >= r.armed_at
end

return M
