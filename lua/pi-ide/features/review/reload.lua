-- After an accept the agent writes the file: buffers showing it (unmodified ones only) reload.
-- A write comes as a burst of events (truncate, write, close) that a loaded machine may spread
-- out: each event restarts a short quiet timer, and watching goes on 2 s after the first
-- reload (so a buffer never keeps a half-written file), or 30 s when the agent never writes.
-- One watcher per file: another accept of the same file renews it.
local log = require("pi-ide.core.log")
local buffers = require("pi-ide.core.buffers")

local M = {}

local watching = {} -- path -> { renew = fn }

local function reload(path, state)
  local buf = buffers.find(path)
  if not buf or not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  if vim.bo[buf].modified then
    if not state.warned then
      state.warned = true
      log.notify(
        ("the agent wrote %s, but your buffer has unsaved edits: it is left as it is (:e! loads the new file)"):format(
          vim.fn.fnamemodify(path, ":~:.")
        ),
        vim.log.levels.WARN
      )
    end
    return
  end
  buffers.reload(buf)
end

--- Watches `path` for the agent's write, and reloads the buffers showing it.
function M.when_written(path)
  if watching[path] then
    watching[path].renew()
    return
  end
  local dir, base = vim.fs.dirname(path), vim.fs.basename(path)
  local watcher = vim.uv.new_fs_event()
  if not watcher then
    return
  end
  local quiet = vim.uv.new_timer()
  local deadline = vim.uv.new_timer()
  local function stop()
    watching[path] = nil
    for _, h in ipairs({ watcher, quiet, deadline }) do
      if not h:is_closing() then
        h:close()
      end
    end
  end
  local state = { warned = false, reloaded = false }
  local function wait(ms)
    deadline:stop()
    deadline:start(ms, 0, vim.schedule_wrap(stop))
  end
  watcher:start(dir, {}, function(err, fname)
    if err or (fname and fname ~= base) or quiet:is_closing() then
      return
    end
    quiet:stop()
    quiet:start(50, 0, function()
      vim.schedule(function()
        reload(path, state)
      end)
      -- Later events of the same write still reload; then watching ends.
      if not state.reloaded then
        state.reloaded = true
        wait(2000)
      end
    end)
  end)
  watching[path] = {
    renew = function()
      state.reloaded = false
      wait(30000)
    end,
  }
  -- An agent that never writes (it may fail): stop watching after a while.
  wait(30000)
end

--- As when_written, for a write that may have landed already (the core answered the agent
--- before Lua heard of it): an unmodified buffer showing `path` is checked at once too (one
--- with edits is warned about only once a write is seen: the agent may write nothing).
function M.maybe_written(path)
  M.when_written(path)
  local buf = buffers.find(path)
  if buf and vim.api.nvim_buf_is_loaded(buf) and not vim.bo[buf].modified then
    buffers.reload(buf)
  end
end

return M
