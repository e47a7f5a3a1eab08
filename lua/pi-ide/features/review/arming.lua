-- When a typed accept counts. A review must never take a key the user aimed elsewhere: one that
-- opens under their fingers (they were typing a moment ago, or it waited for them to leave
-- Insert mode) opens without taking the focus, and says where it is; one that opens while they
-- are idle takes the focus, but an accept (`:w`, ZZ, the save key, the accept key) begun less
-- than `review.seen_ms` after it was drawn was planned before they could see it, and does
-- nothing. The user's own move into a review (`gt`, a window command) counts once they have been
-- there `seen_ms` too; :PiIde review, which names it, at once.
local config = require("pi-ide.core.config")
local typing = require("pi-ide.core.typing")

local M = {}

-- A key this recent means the user is at work: a review opening now would take the next ones.
M.BUSY_MS = 500
-- A window entered this soon after a key the user typed is their own move (a plugin's or ours
-- comes without one).
local MOVE_MS = 1000

-- When the command line under way was begun (its `:`), until it has run.
local began
-- Set while the plugin itself moves between windows (a review closing): no one's move.
local moving = false

local tracking
local function track()
  if tracking then
    return
  end
  tracking = vim.api.nvim_create_augroup("PiIdeReviewArming", { clear = true })
  vim.api.nvim_create_autocmd("CmdlineEnter", {
    group = tracking,
    callback = function()
      began = typing.now()
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
--- no key came there in the last BUSY_MS). Keys typed in a chat or an agent's terminal talk
--- with agents: what an agent sends next is the answer they wait for. Keys typed in another
--- review are the user's (its :w is aimed at it).
function M.takes_focus(r)
  track()
  return r.asked or not ((r.waited or typing.within(M.BUSY_MS)) and typing.last_key_was_theirs())
end

--- Review `r` opens: with the focus (`focused`) or without. Asked for (:PiIde review while it
--- waited), it counts at once; this once only: a later opening (moved to two panes because the
--- user typed in the file) decides afresh.
function M.opened(r, focused)
  track()
  r.quiet = not focused
  r.focused = focused
  r.armed_at = nil
  if r.asked then
    r.asked = nil
    r.armed_at = typing.now()
  end
end

--- Review `r` is on screen (all its panes, or its inline view): drawn now, so that the time it
--- has been seen counts from what the user sees, not from when its building began.
function M.drawn(r)
  if r.focused and not r.armed_at then
    vim.cmd("redraw")
    r.armed_at = typing.now() + config.values.review.seen_ms
  end
end

--- Runs `fn`, the plugin's own moves between windows: none of them is the user coming to a
--- review.
function M.plugin_moves(fn)
  local was = moving
  moving = true
  local ok, err = pcall(fn)
  moving = was
  if not ok then
    error(err, 0)
  end
end

--- A window of review `r` was entered: the user's own move when they typed a key just before
--- (a window or tab command) and the plugin was not moving; `named`: they named it
--- (:PiIde review), which counts at once.
function M.came(r, named)
  if moving or not (named or typing.within(MOVE_MS)) then
    return
  end
  r.quiet = false
  local at = typing.now() + (named and 0 or config.values.review.seen_ms)
  r.armed_at = math.min(r.armed_at or at, at)
end

--- Whether a typed accept of review `r` counts now; when not, says why in one line.
function M.allows(r)
  local at = began or typing.now()
  if r.armed_at and at >= r.armed_at then
    return true
  end
  local name = vim.fn.fnamemodify(r.path, ":t")
  -- One line at 80 columns: a longer one stops the user at Press ENTER.
  local why = r.armed_at and "it had only just opened" or "go to it first (:PiIde review)"
  vim.notify(("pi-ide.nvim: %s not accepted: %s"):format(name, why), vim.log.levels.WARN)
  return false
end

--- Whether review `r` takes typed accepts now (for :PiIde status and tests).
function M.armed(r)
  return r.armed_at ~= nil and typing.now() >= r.armed_at
end

return M
