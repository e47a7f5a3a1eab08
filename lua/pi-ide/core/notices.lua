-- Notices from the core (a message over max_message_size, a review refused by a bound, ...):
-- the first of a kind is shown at once; the rest of a burst of the same kind is summed up in
-- one line once it has been quiet for a moment, so that an agent sending 200 reviews at once
-- does not bury the user under 200 messages. The core has logged each one already.
local M = {}

local QUIET_MS = 1500
local levels = { info = vim.log.levels.INFO, warn = vim.log.levels.WARN, error = vim.log.levels.ERROR }
local bursts = {} -- key -> { more, last, level, timer }

local function show(msg, level)
  vim.notify("pi-ide.nvim: " .. msg, level, { title = "pi-ide.nvim" })
end

local function burst_over(key)
  local b = bursts[key]
  bursts[key] = nil
  if not b then
    return
  end
  b.timer:close()
  if b.more > 0 then
    show(("%d more like this; the last: %s"):format(b.more, b.last), b.level)
  end
end

--- A `notice` event from the core: { key, level, message }.
function M.show(ev)
  local level = levels[ev.level] or vim.log.levels.WARN
  local b = bursts[ev.key]
  if b then
    b.more, b.last, b.level = b.more + 1, ev.message, level
  else
    b = { more = 0, timer = vim.uv.new_timer() }
    bursts[ev.key] = b
    show(ev.message, level)
  end
  b.timer:stop()
  b.timer:start(QUIET_MS, 0, vim.schedule_wrap(function()
    burst_over(ev.key)
  end))
end

return M
